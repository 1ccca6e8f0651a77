import os

from hypothesis import HealthCheck, settings

settings.register_profile(
    "posenc",
    deadline=None,
    max_examples=int(os.environ.get("POSENC_HYPOTHESIS_EXAMPLES", "60")),
    suppress_health_check=[HealthCheck.too_slow],
    derandomize=True,
)
settings.load_profile("posenc")

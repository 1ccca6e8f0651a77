"""posenc for JAX (extra ``posenc[jax]``): exact rows inside ``jit``, from 32-bit integer operations only.

The rows are built in the traced program from 32-bit integer operations
(:mod:`posenc.exact.fixed`): for every int32 position they are the NumPy
core's float32 rows bit for bit, on any backend, with no float64 and no dot
in the graph, with ``jax_enable_x64`` off or on. Host positions headed for
``jax.jit`` go through :func:`positions` (JAX would cut an int64 to int32
silently). Never imported by :mod:`posenc` itself.

>>> import jax, jax.numpy as jnp
>>> from posenc.jax import apply_rope
>>> q = jnp.ones((2, 8, 64))                                  # [b, s, h_d]
>>> jax.jit(lambda q, p: apply_rope(q, p))(q, jnp.arange(8)).shape
(2, 8, 64)
"""

try:
    import jax  # noqa: F401
except ImportError as exc:  # pragma: no cover - exercised in a subprocess by the tests
    raise ImportError("posenc.jax needs JAX, which is not installed: pip install 'posenc[jax]'") from exc

from .bias import alibi_bias, t5_bias, t5_bucket
from .fields import fourier_features, nerf_encoding
from .grid import encode_nd
from .inputs import positions
from .rope import apply_rope, rope_cos_sin, rope_frequencies, rotate
from .sinusoidal import encode, table
from .timesteps import timestep_embedding


def __getattr__(name: str) -> object:
    # the Flax modules load flax (a second, slower import) only when asked for
    if name in ("RotaryEmbedding", "SinusoidalEmbedding"):
        from . import modules

        return getattr(modules, name)
    raise AttributeError(f"module 'posenc.jax' has no attribute {name!r}")


__all__ = ["RotaryEmbedding", "SinusoidalEmbedding", "alibi_bias", "apply_rope", "encode", "encode_nd",
           "fourier_features", "nerf_encoding", "positions", "rope_cos_sin", "rope_frequencies", "rotate", "t5_bias",
           "t5_bucket", "table", "timestep_embedding"]

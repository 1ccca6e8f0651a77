"""posenc for PyTorch (extra ``posenc[torch]``): modules and functional ops.

Tables come from the NumPy core, so every value here equals the NumPy API's
bit for bit. Never imported by :mod:`posenc` itself.

>>> import torch
>>> from posenc.torch import SinusoidalPositionalEncoding
>>> SinusoidalPositionalEncoding(512)(torch.zeros(2, 10, 512)).shape
torch.Size([2, 10, 512])
"""

try:
    import torch  # noqa: F401
except ImportError as exc:  # pragma: no cover - exercised in a subprocess by the tests
    raise ImportError(
        "posenc.torch needs PyTorch, which is not installed: pip install 'posenc[torch]'"
    ) from exc

from ..support.compile import prepare_when_compiling
from ._cache import TableCache
from .bias import AlibiBias, T5RelativeBias
from .fields import FourierFeatures, NeRFEncoding
from .functional import alibi_bias, encode_nd, fourier_features, nerf_encoding, t5_bias, t5_bucket, timestep_embedding
from .rope import RotaryEmbedding
from .rope_functional import apply_rope, positions_from_cu_seqlens, rope_cos_sin
from .sinusoidal import SinusoidalPositionalEncoding, encode, table
from .timesteps import Timesteps

# posenc.torch does not load torch._dynamo (~1.5 s at import, ~1 s at exit, for a process that never compiles);
# the wrappers, the NumPy core's and this package's (host_only), are made when it loads, or here if it has: a
# first compiled call meets them ready (posenc.support.compile)
prepare_when_compiling()

__all__ = [
    "AlibiBias",
    "FourierFeatures",
    "NeRFEncoding",
    "RotaryEmbedding",
    "SinusoidalPositionalEncoding",
    "T5RelativeBias",
    "TableCache",
    "Timesteps",
    "alibi_bias",
    "apply_rope",
    "encode",
    "encode_nd",
    "fourier_features",
    "nerf_encoding",
    "positions_from_cu_seqlens",
    "rope_cos_sin",
    "t5_bias",
    "t5_bucket",
    "table",
    "timestep_embedding",
]

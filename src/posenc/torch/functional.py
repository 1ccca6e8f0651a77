"""The NumPy API's functions on torch tensors: each its family's generic function on torch's primitives.

:func:`timestep_embedding`, :func:`nerf_encoding`, :func:`fourier_features`,
:func:`alibi_bias`, :func:`t5_bucket` and :func:`t5_bias` are
:mod:`posenc.timesteps.functions`, :mod:`posenc.fields.functions` and
:mod:`posenc.bias.functions` bound to the torch primitives
(:data:`~posenc.torch.timesteps.TORCH_TIMESTEPS`,
:data:`~posenc.torch.fields.TORCH_FIELDS`, :data:`~posenc.torch.bias.TORCH_BIAS`),
with the NumPy functions' parameters (:func:`posenc.support.signatures.parameters_of`):
the checks are the NumPy function's, before any work; the values are the
computation of the concept's module (:class:`~posenc.torch.Timesteps`' host
rows for a CPU tensor without a gradient, no module built; otherwise its
device paths, :class:`~posenc.torch.NeRFEncoding`,
:class:`~posenc.torch.FourierFeatures`, :class:`~posenc.torch.AlibiBias`,
:class:`~posenc.torch.T5RelativeBias`'s buckets, built for the call) on the
input's device, in the dtype asked for; :func:`encode_nd` (no torch module)
is :func:`posenc.encode_nd`'s rows from the host. Inside a model, hold the
module instead (built once, its tables cached, traceable by
``torch.compile(fullgraph=True)``).

>>> import torch
>>> timestep_embedding(torch.tensor([0, 1]), 4).tolist()
[[0.0, 0.0, 1.0, 1.0], [0.8414709568023682, 9.999999747378752e-05, 0.5403022766113281, 1.0]]
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import torch

from ..bias import functions as bias_functions
from ..bias.alibi import alibi_bias as numpy_alibi_bias
from ..bias.t5 import t5_bias as numpy_t5_bias
from ..bias.t5 import t5_bucket as numpy_t5_bucket
from ..fields import functions as fields_functions
from ..fields.encoding import fourier_features as numpy_fourier_features
from ..fields.encoding import nerf_encoding as numpy_nerf_encoding
from ..sinusoidal.conventions_nd import AnyNdConvention, AxialSettings
from ..sinusoidal.grid import encode_nd as numpy_encode_nd
from ..support.compile import host_only
from ..support.signatures import parameters_of
from ..timesteps import functions as timesteps_functions
from ..timesteps.embedding import timestep_embedding as numpy_timestep_embedding
from ._fixed import round_once
from ._inputs import check_float, host_input
from .backend import _HOST_DTYPES
from .bias import TORCH_BIAS
from .fields import TORCH_FIELDS
from .timesteps import TORCH_TIMESTEPS

if TYPE_CHECKING:
    from typing_extensions import Unpack

__all__ = ["alibi_bias", "encode_nd", "fourier_features", "nerf_encoding", "t5_bias", "t5_bucket",
           "timestep_embedding"]


def _reason(name: str, instead: str) -> str:
    return (f"posenc.torch.{name} builds its module (or its rows on the host) at every call, which torch.compile "
            f"cannot trace: inside a compiled model use {instead}, or compile with fullgraph=False")


@host_only(_reason("timestep_embedding", "posenc.torch.Timesteps"))
@parameters_of(numpy_timestep_embedding, dtype=torch.float32)
def timestep_embedding(*args: Any, **kwargs: Any) -> torch.Tensor:
    """:func:`posenc.timestep_embedding` on t's device: ``[..., dim]``, :class:`~posenc.torch.Timesteps`' values.

    Args:
        t: a real tensor ``[...]`` (integer steps, fractional or continuous t
            or σ; bfloat16 and grad-requiring too), on any device, or an
            array-like (read as NumPy reads it).
        dim, convention: as :func:`posenc.timestep_embedding`.
        dtype: torch.float16, bfloat16, float32 or float64; each value rounded once.

    Returns:
        ``[..., dim]`` in ``dtype`` on t's device: the NumPy function's bits
        on the host (within 1 ulp elsewhere: the module's device paths),
        differentiable in a floating t.

    Raises:
        PosEncError: what the NumPy function refuses (a bad dim, convention
            or dtype, a NaN, infinite or too large t) and an output larger
            than the device's memory, before any work.

    >>> timestep_embedding([0.5], 3, convention="flux", dtype=torch.float64).round(decimals=4).tolist()
    [[-0.8838, -0.4678, 0.0]]
    """
    return timesteps_functions.timestep_embedding(TORCH_TIMESTEPS, *args, **kwargs)


@host_only(_reason("nerf_encoding", "posenc.torch.NeRFEncoding"))
@parameters_of(numpy_nerf_encoding, dtype=torch.float32)
def nerf_encoding(*args: Any, **kwargs: Any) -> torch.Tensor:
    """:func:`posenc.nerf_encoding` on x's device: ``[..., 2·L·d (+ d)]``, :class:`~posenc.torch.NeRFEncoding`'s values.

    Args:
        x: real coordinates ``[..., d]`` (a tensor on any device, or an
            array-like read as NumPy reads it); a scalar is one point.
        n_freqs, convention, include_input: as :func:`posenc.nerf_encoding`.
        dtype: torch.float16, bfloat16, float32 or float64; each value rounded once.

    Returns:
        ``[..., 2·L·d (+ d)]`` in ``dtype`` on x's device, differentiable in x.

    Raises:
        PosEncError: what the NumPy function refuses (bad bands, convention,
            include_input or dtype; a NaN, infinite or too large x; an x that
            float16 cannot hold beside ``include_input``) and an output larger
            than the device's memory, before any work.

    >>> nerf_encoding([[0.25, 1.0]], 2, convention="tcnn", dtype=torch.float64).round(decimals=4).tolist()
    [[0.7071, 0.7071, 1.0, 0.0, 0.0, -1.0, 0.0, 1.0]]
    """
    return fields_functions.nerf_encoding(TORCH_FIELDS, *args, **kwargs)


@host_only(_reason("fourier_features", "posenc.torch.FourierFeatures"))
@parameters_of(numpy_fourier_features, dtype=torch.float32)
def fourier_features(*args: Any, **kwargs: Any) -> torch.Tensor:
    """:func:`posenc.fourier_features` on x's device: ``[..., 2m]``, :class:`~posenc.torch.FourierFeatures`' values.

    Args:
        x: coordinates v ``[..., d]`` (a tensor on any device, or an
            array-like read as NumPy reads it); a scalar is one point.
        b: B ``[m, d]``, a tensor or array-like (held in float64, as the
            module holds it: its gradient is not followed).
        dtype: torch.float16, bfloat16, float32 or float64; each value rounded once.

    Returns:
        ``[..., 2m]`` in ``dtype`` on x's device: the m cosines, then the m
        sines; differentiable in x.

    Raises:
        PosEncError: what the NumPy function refuses (a B that is not a finite
            ``[m, d]`` matrix, an x of another d, NaN or infinite values, a
            bad dtype) and an output larger than the device's memory, before
            any work.

    >>> fourier_features([[1 / 8, 1 / 4]], [[1.0, 0.0], [2.0, 1.0]], dtype=torch.float64).round(decimals=4).tolist()
    [[0.7071, -1.0, 0.7071, 0.0]]
    """
    return fields_functions.fourier_features(TORCH_FIELDS, *args, **kwargs)


@host_only(_reason("alibi_bias", "posenc.torch.AlibiBias"))
@parameters_of(numpy_alibi_bias, dtype=torch.float32)
def alibi_bias(*args: Any, **kwargs: Any) -> torch.Tensor:
    """:func:`posenc.alibi_bias` as a tensor: :class:`~posenc.torch.AlibiBias`' bias, head axis third from last.

    Args:
        q_len, k_len, n_heads, offset, convention, causal: as :func:`posenc.alibi_bias`.
        positions: None, or integer key positions ``[k_len]`` / ``[b, k_len]``
            (a tensor on any device, or an array-like); the module's rows are
            indexed by whole distances, so fractional positions are refused.
        dtype: torch.float16, bfloat16, float32 or float64 (float32 and
            float64: the NumPy function's bits; the narrow ones rounded from float32).

    Returns:
        ``[n_heads, q_len, k_len]``, or ``[b, n_heads, q_len, k_len]`` for
        ``[b, k_len]`` positions, on the positions' device (the CPU without them).

    Raises:
        PosEncError: what the module refuses (the NumPy function's checks),
            before any work.

    >>> alibi_bias(3, 3, 1).tolist()
    [[[0.0, -inf, -inf], [-0.00390625, 0.0, -inf], [-0.0078125, -0.00390625, 0.0]]]
    """
    return bias_functions.alibi_bias(TORCH_BIAS, *args, **kwargs)


@host_only(_reason("t5_bucket", "posenc.torch.T5RelativeBias (its bucket method)"))
@parameters_of(numpy_t5_bucket)
def t5_bucket(*args: Any, **kwargs: Any) -> torch.Tensor:
    """:func:`posenc.t5_bucket` on the offsets' device: int64, :class:`~posenc.torch.T5RelativeBias`' buckets.

    Args:
        relative_position: integer offsets ``j − i`` (a tensor on any
            device, or an array-like), |r| < 2**53.
        spec, settings: as :func:`posenc.t5_bucket`.

    Returns:
        int64 buckets, the same shape, on the offsets' device.

    Raises:
        PosEncError: what the NumPy function refuses, before any work.

    >>> t5_bucket(torch.tensor([-1, 0, 1, -8, -12, -128])).tolist()
    [1, 0, 17, 8, 9, 15]
    """
    return bias_functions.t5_bucket(TORCH_BIAS, *args, **kwargs)


@host_only(_reason("t5_bias", "posenc.torch.T5RelativeBias"))
@parameters_of(numpy_t5_bias)
def t5_bias(*args: Any, **kwargs: Any) -> torch.Tensor:
    """:func:`posenc.t5_bias` on weights' device: ``[n_heads, q_len, k_len]``, ``weights[bucket(j − i)]``.

    :class:`~posenc.torch.T5RelativeBias`' forward for a table passed in:
    the module's buckets, looked up in ``weights`` as its ``nn.Embedding``
    looks them up (differentiable in the weights).

    Args:
        weights: ``[num_buckets, n_heads]`` float tensor (HF
            ``relative_attention_bias.weight``) or array-like.
        q_len, k_len, offset: as :func:`posenc.t5_bias`.
        q_positions, k_positions: None, or integer positions (tensors or
            array-likes), as :func:`posenc.t5_bias`.
        bidirectional, max_distance: as :func:`posenc.t5_bucket`.

    Returns:
        ``[n_heads, q_len, k_len]`` in weights' dtype, on its device.

    Raises:
        PosEncError: what the NumPy function refuses, and an output larger
            than the device's memory, before any work.

    >>> t5_bias(torch.arange(64.0).reshape(32, 2), 1, 3)[0].tolist()
    [[0.0, 34.0, 36.0]]
    """
    return bias_functions.t5_bias(TORCH_BIAS, *args, **kwargs)


@host_only(_reason("encode_nd", "posenc.torch.encode_nd before the compiled region"))
def encode_nd(coords: Any, d_model: int, *, convention: AnyNdConvention = None, dtype: Any = torch.float32,
              cls_token: Any = False, **settings: Unpack[AxialSettings]) -> torch.Tensor:
    """:func:`posenc.encode_nd` as a tensor on the coordinates' device: its bits, computed on the host.

    Args:
        coords: ``[..., n]`` real coordinates (a tensor on any device, or an
            array-like: :func:`posenc.grid`'s integers too).
        d_model, convention, cls_token, settings: as :func:`posenc.encode_nd`.
        dtype: torch.float16, bfloat16 (the float64 values rounded once),
            float32 or float64.

    Returns:
        ``[..., d_model]`` (``[..., k + m, d_model]`` with ``cls_token``) in
        ``dtype``, on the coordinates' device (the CPU for an array-like).

    Raises:
        PosEncError: what the NumPy function refuses, before any work.

    >>> encode_nd(torch.tensor([[0, 1]]), 4, dtype=torch.float64).round(decimals=4).tolist()
    [[0.0, 1.0, 0.8415, 0.5403]]
    """
    dt = check_float(dtype)
    host, device = host_input(coords, "coords")
    out = torch.from_numpy(numpy_encode_nd(host, d_model, convention=convention, dtype=_HOST_DTYPES[dt],
                                          cls_token=cls_token, **settings))
    out = round_once(out, dt) if out.dtype != dt else out
    return out if device is None or device.type == "cpu" else out.to(device)

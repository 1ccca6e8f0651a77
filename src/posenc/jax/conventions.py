"""RoPE and sinusoids as JAX codebases write them, each with exact rows: MaxText, gemma, keras-hub, big_vision, flax.

Each function takes the source's own arguments and layout and computes the
source's formula with the angle exact (rows from :mod:`posenc.jax._rows`);
the sources compute the angle in float32 (``position / timescale``) and so
drift from it at large positions. Read for the facts, cited per function;
tests/jax/test_jax_conventions.py checks each against its formula written
independently.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any

import jax.numpy as jnp
import numpy as np

import jax

from ..errors import PosEncError, check_base, check_d_model
from ..exact import geometric_ladder
from ..rope.permute import qk_permutation
from ..rope.scaling import Linear, Llama3
from ..sinusoidal import encode_nd, grid
from ..sinusoidal import table as np_table
from ..sinusoidal.conventions import Keras, Tensor2Tensor
from ..sinusoidal.conventions_nd import BigVision
from ..support.vocabulary import PairLayout, RopeLayout
from ._rows import host_rows, sincos_rows
from .inputs import as_input, check_traced_positions
from .rope import apply_rope, rope_frequencies, rotate
from .sinusoidal import encode

__all__ = [
    "big_vision_posemb_sincos_2d",
    "flax_sinusoidal_init",
    "gemma_apply_rope",
    "keras_hub_rotary_embedding",
    "keras_hub_sine_position_encoding",
    "maxtext_llama_rope",
    "maxtext_qk_kernel",
    "maxtext_rope",
]


def _fraction(value: float, name: str) -> Fraction:
    if not (isinstance(value, (int, float)) and np.isfinite(value) and value > 0):
        raise PosEncError(f"{name} must be a positive finite number, got {value!r}")
    return Fraction(value)


def _rotate_ladder(x: jax.Array, positions: Any, ladder: Any, pairs: int, layout: RopeLayout) -> jax.Array:
    """x ``[B, S, N, H]`` rotated by the ladder's angles on its first pairs, pairs beyond left still (angle 0)."""
    pos = check_traced_positions(positions)
    sin, cos = sincos_rows(pos, ladder)  # [B, S, n], once for every head
    n = sin.shape[-1]
    if pairs > n and layout == "half":  # pairs (i, i + pairs) for i < n turn, the rest stay: Gemma 4's layout
        layout = "head_half"
    # the still pairs are passed through, never rotated by (cos, sin) = (1, 0): padded rows fused into the
    # rotation would let XLA contract its products otherwise than an eager call does
    return rotate(x, cos[..., None, :], sin[..., None, :], layout, 2 * n)


def _check_bsnh(x: Any, name: str = "inputs") -> jax.Array:
    arr = jnp.asarray(as_input(x, name))
    if arr.ndim != 4:
        raise PosEncError(f"{name} must be [batch, sequence, heads, head_dim], got shape {tuple(arr.shape)}")
    check_d_model(arr.shape[-1], "head_dim")
    return arr


def maxtext_rope(
    inputs: Any, position: Any, *, min_timescale: float = 1, max_timescale: float = 10_000,
    rope_linear_scaling_factor: float = 1.0,
) -> jax.Array:
    """MaxText's ``RotaryEmbedding``: half layout, timescale_i = min·(max/min)**(2i/H)·linear factor.

    Source: AI-Hypercomputer/maxtext ``src/MaxText/layers/embeddings.py``
    (``RotaryEmbedding.timescale`` and ``__call__``: ``position / timescale``,
    ``jnp.split(inputs, 2)``). inputs ``[B, S, N, H]``, position ``[B, S]``
    (int32 or float32). Returns inputs' dtype (MaxText's ``fprop_dtype`` cast
    is the caller's ``.astype``).
    """
    x = _check_bsnh(inputs)
    h = x.shape[-1]
    lo, hi = _fraction(min_timescale, "min_timescale"), _fraction(max_timescale, "max_timescale")
    scale = 1 / (lo * _fraction(rope_linear_scaling_factor, "rope_linear_scaling_factor"))
    ladder = geometric_ladder(h // 2, check_base(float(hi / lo), "max_timescale / min_timescale"), Fraction(h, 2),
                              scale)
    return _rotate_ladder(x, position, ladder, h // 2, "half")


def maxtext_llama_rope(
    inputs: Any, position: Any, *, max_timescale: float = 10_000, use_scale: bool = True
) -> jax.Array:
    """MaxText's ``LLaMARotaryEmbedding``: interleaved pairs (2i, 2i+1) and Llama 3.1's scaling.

    Source: AI-Hypercomputer/maxtext ``src/MaxText/layers/embeddings.py``
    (``LLaMARotaryEmbedding``: ``fraction = jnp.repeat(fraction, 2)``, the
    shifted inputs with sign ``[-1, 1]``, ``_apply_scaling_factor`` with factor
    8, low 1, high 4, original length 8192). Its ``min_timescale`` is 1 in
    every MaxText Llama config, so it is not an argument here.
    """
    x = _check_bsnh(inputs)
    scaling = Llama3(8.0, 1.0, 4.0, 8192) if use_scale else None
    pos = check_traced_positions(position)
    return apply_rope(x, pos[..., None], base=float(max_timescale), scaling=scaling, layout="interleaved")


def gemma_apply_rope(
    inputs: Any, positions: Any, *, base_frequency: float, scale_factor: float = 1.0, rope_proportion: float = 1.0
) -> jax.Array:
    """gemma's ``apply_rope``: half layout over the whole head, the first pairs turning, the rest still.

    Source: google-deepmind/gemma ``gemma/gm/math/_positional_embeddings.py``
    (``apply_rope``): ``rope_angles = int(rope_proportion * head_dim // 2)``,
    timescale_i = base**(2i/H) for i < rope_angles, ``inf`` (angle 0) for the
    other pairs, angle ``positions / timescale / scale_factor``, pairs
    (i, i + H/2). ``scale_factor < 1`` is refused, as gemma refuses it.
    """
    x = _check_bsnh(inputs)
    h = x.shape[-1]
    if not scale_factor >= 1.0:
        raise PosEncError(f"scale_factor must be >= 1.0 (gemma's rule), got {scale_factor!r}")
    if not 0.0 <= rope_proportion <= 1.0:
        raise PosEncError(f"rope_proportion must be in [0, 1], got {rope_proportion!r}")
    angles = int(rope_proportion * h // 2)
    if angles == 0:
        return x
    ladder = geometric_ladder(angles, check_base(float(base_frequency), "base_frequency"), Fraction(h, 2),
                              1 / _fraction(scale_factor, "scale_factor"))
    return _rotate_ladder(x, positions, ladder, h // 2, "half")


def keras_hub_rotary_embedding(
    inputs: Any, start_index: Any = 0, positions: Any = None, *, max_wavelength: float = 10000,
    scaling_factor: float = 1.0, sequence_axis: int = 1, feature_axis: int = -1,
) -> jax.Array:
    """keras-hub's ``RotaryEmbedding`` layer: half layout, positions divided by ``scaling_factor``.

    Source: keras-team/keras-hub ``keras_hub/src/layers/modeling/rotary_embedding.py``
    (``_get_inverse_freq``: 1 / max_wavelength**(arange(0, r, 2)/r);
    positions ``arange(seq_len) + start_index`` unless given, divided by the
    scaling factor; ``stack((freq, freq), axis=-2)``; ``x·cos + rotate_half(x)·sin``).
    keras-hub casts cos/sin to the compute dtype; here the rotation is float32
    and rounded once.
    """
    x = jnp.asarray(as_input(inputs, "inputs"))
    fa, sa = feature_axis % x.ndim, sequence_axis % x.ndim
    moved = jnp.moveaxis(x, (sa, fa), (-2, -1))
    if positions is None:
        positions = jnp.arange(moved.shape[-2], dtype=jnp.int32) + jnp.asarray(start_index, jnp.int32)
    freqs = rope_frequencies(moved.shape[-1], base=float(max_wavelength),
                        scaling=None if scaling_factor == 1.0 else Linear(scaling_factor))
    pos = check_traced_positions(positions)
    sin, cos = sincos_rows(pos, freqs.ladder)
    out = rotate(moved, cos, sin, "half", moved.shape[-1])
    return jnp.moveaxis(out, (-2, -1), (sa, fa))


def keras_hub_sine_position_encoding(inputs: Any, start_index: Any = 0, *, max_wavelength: float = 10000) -> jax.Array:
    """keras-hub's ``SinePositionEncoding``: the encoding of ``arange(seq_len) + start_index``, ``[..., S, D]``.

    Source: keras-team/keras-hub ``keras_hub/src/layers/modeling/sine_position_encoding.py``
    (the :class:`posenc.conventions.Keras` preset: interleaved, an odd width ends with a sine).
    """
    x = jnp.asarray(as_input(inputs, "inputs"))
    pos = jnp.arange(x.shape[-2], dtype=jnp.int32) + jnp.asarray(start_index, jnp.int32)
    enc = encode(pos, x.shape[-1], convention=Keras(float(max_wavelength)))
    return jnp.broadcast_to(enc, x.shape).astype(x.dtype)


def big_vision_posemb_sincos_2d(h: int, w: int, width: int, temperature: float = 10_000.0,
                                dtype: Any = jnp.float32) -> jax.Array:
    """big_vision's ``posemb_sincos_2d``: ``[1, h·w, width]``, all static, exact (a constant).

    Source: google-research/big_vision ``big_vision/models/vit.py`` (the
    :class:`posenc.sinusoidal.conventions_nd.BigVision` preset).
    """
    conv = BigVision(float(temperature))
    return host_rows(lambda np_dt: encode_nd(grid(h, w), width, convention=conv, dtype=np_dt)[None], dtype)


def flax_sinusoidal_init(max_len: int = 2048, min_scale: float = 1.0, max_scale: float = 10000.0) -> Any:
    """The flax examples' ``sinusoidal_init``: an initializer of ``[1, max_len, d]``, exact.

    Source: google/flax ``examples/lm1b/models.py`` and ``examples/wmt/models.py``
    (``sinusoidal_init``: div_term = min_scale·exp(−k·ln(max/min)/(d//2 − 1)),
    sines in the first d//2 channels, cosines in the next, a zero channel when
    d is odd: tensor2tensor's timing signal, :class:`posenc.conventions.Tensor2Tensor`).
    """
    conv = Tensor2Tensor(min_timescale=float(min_scale), max_timescale=float(max_scale))

    def init(key: Any, shape: Any, dtype: Any = jnp.float32) -> jax.Array:
        del key
        return host_rows(lambda np_dt: np_table(max_len, int(shape[-1]), convention=conv, dtype=np_dt)[None], dtype)

    return init


def maxtext_qk_kernel(kernel: Any, from_layout: PairLayout, to_layout: PairLayout, *,
                      rotary_dim: int | None = None) -> Any:
    """A q or k kernel ``[d_in, n_heads, head_dim]`` (MaxText's ``DenseGeneral``) moved between RoPE layouts.

    MaxText's Llama runs interleaved pairs (``LLaMARotaryEmbedding``); HF's
    checkpoints are in the half layout. Loading one into the other without
    this permutation of each head's channels rotates the wrong pairs
    (AI-Hypercomputer/maxtext#1774). ``"interleaved"`` → ``"half"`` takes a
    MaxText kernel to HF's order; the reverse brings HF weights in. The
    permutation is :func:`posenc.qk_permutation`'s, on the last axis.

    >>> maxtext_qk_kernel(np.arange(4).reshape(1, 1, 4), "interleaved", "half").tolist()
    [[[0, 2, 1, 3]]]
    """
    shape = tuple(getattr(kernel, "shape", ()))
    if len(shape) != 3:
        raise PosEncError(f"kernel must be [d_in, n_heads, head_dim], got shape {shape}")
    idx = qk_permutation(shape[-1], 1, from_layout, to_layout, rotary_dim=rotary_dim)
    return kernel[..., idx]

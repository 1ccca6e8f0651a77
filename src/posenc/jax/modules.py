"""Flax NNX modules: RoPE and the sinusoid, with no parameters and no tables in the state.

Each module holds only its static settings (validated once, at construction);
the rows are built inside the traced program by :mod:`posenc.jax._rows`, so
``nnx.state(module)`` is empty and ``nnx.jit`` / ``nnx.vmap`` see nothing to
carry. The layout of q and k is Flax's (MaxText, gemma): ``[b, s, n_h, h_d]``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, cast

import jax.numpy as jnp
from flax import nnx

import jax

from ..errors import PosEncError
from ..rope.frequencies import RopeFrequencies
from ..rope.spec import RopeConfig, as_spec
from ..sinusoidal.conventions import AnyConvention, SinusoidSettings
from ..support.arguments import default
from ..support.vocabulary import LadderSharing, RopeLayout, SectionLayout
from ._rows import computed_once
from .inputs import check_traced_positions
from .rope import cos_sin_rows, float_array, rotate, traced_frequencies
from .sinusoidal import encode

if TYPE_CHECKING:
    from typing_extensions import Unpack

__all__ = ["RotaryEmbedding", "SinusoidalEmbedding"]


class RotaryEmbedding(nnx.Module):
    """Rotate queries and keys by their positions, exact rows built in the graph.

    Args:
        head_dim: channels per head, or a :class:`posenc.RopeConfig` in its
            place (``posenc.from_hf_config(config)``, ``posenc.rope_preset``),
            which brings every setting it holds, the layout included; the
            keywords it holds are then left out (refused by name).
        base, scaling, rotary_dim, seq_len, sections, section_layout, ladder:
            as :func:`posenc.jax.apply_rope` (``seq_len`` required for DynamicNTK
            and LongRoPE).
        layout: ``"half"`` (HF, MaxText, gemma) or ``"interleaved"`` (Meta, GPT-J).

    ``__call__(q, k, positions)``: q ``[b, s, n_q, h_d]`` and k ``[b, s, n_kv, h_d]``
    (any float dtypes), positions int32/float32 ``[s]`` or ``[b, s]`` (with
    sections ``[s, n_axes]`` / ``[b, s, n_axes]``). Returns both rotated, each in
    its dtype; float32 math on the exact rows, rounded once (for float32 q
    and k, :func:`posenc.apply_rope`'s bits). The rows are computed once per
    position and shared by q, k and every head.

    >>> import jax.numpy as jnp
    >>> rope = RotaryEmbedding(64, base=500000.0)
    >>> q, k = rope(jnp.ones((1, 8, 4, 64)), jnp.ones((1, 8, 2, 64)), jnp.arange(8))
    >>> q.shape, k.shape, nnx.state(rope) == nnx.State({})
    ((1, 8, 4, 64), (1, 8, 2, 64), True)

    A checkpoint's settings in one line (here a GPT-J-style interleaved layout):

    >>> import posenc
    >>> cfg = posenc.RopeConfig(64, rotary_dim=32, layout="interleaved")
    >>> RotaryEmbedding(cfg).layout, RotaryEmbedding(cfg).rotary_dim
    ('interleaved', 32)
    """

    def __init__(
        self,
        head_dim: int | RopeConfig,
        *,
        base: float = default(10000.0),
        scaling: Any = None,
        layout: RopeLayout = default("half"),
        rotary_dim: int | None = None,
        seq_len: int | None = None,
        sections: Any = None,
        section_layout: SectionLayout = default("contiguous"),
        ladder: LadderSharing = default("shared"),
    ) -> None:
        # every static argument checked now, once, by the spec the NumPy API builds; not at the first call
        given: dict[str, Any] = {"rotary_dim": rotary_dim, "base": base, "scaling": scaling, "layout": layout,
                                 "sections": sections, "section_layout": section_layout, "ladder": ladder}
        self.spec = as_spec(head_dim, **given)
        self.head_dim, self.rotary_dim = self.spec.head_dim, int(self.spec.rotary_dim or self.spec.head_dim)
        self.layout = self.spec.layout
        self.seq_len = seq_len
        self._frequencies()

    def _frequencies(self) -> RopeFrequencies:
        return traced_frequencies(self.spec, self.seq_len)

    def __call__(self, q: jax.Array, k: jax.Array, positions: Any) -> tuple[jax.Array, jax.Array]:
        freqs = self._frequencies()
        q, k = float_array(q, "q"), float_array(k, "k")
        for name, x in (("q", q), ("k", k)):
            if x.ndim != 4 or x.shape[-1] != self.head_dim:
                raise PosEncError(f"{name} must be [b, s, n_h, {self.head_dim}], got shape {tuple(x.shape)}")
        pos = check_traced_positions(positions)
        lead = pos.shape if freqs.sections is None else pos.shape[:-1]
        if len(lead) not in (1, 2) or lead[-1] != q.shape[1]:
            raise PosEncError(f"positions must be [s] or [b, s] with s = {q.shape[1]}, got shape {tuple(pos.shape)}")
        cos, sin = computed_once(lambda p: cos_sin_rows(p, freqs), pos)  # [..., s, r/2], once for every head
        cos, sin = cos[..., None, :], sin[..., None, :]
        return (rotate(q, cos, sin, self.layout, self.rotary_dim),
                rotate(k, cos, sin, self.layout, self.rotary_dim))


class SinusoidalEmbedding(nnx.Module):
    """Add the sinusoidal encoding (:func:`posenc.jax.encode`) of the positions to x.

    Args:
        d_model: channels.
        convention, settings: as :func:`posenc.encode` (``base``, ``layout`` without a convention).

    ``__call__(x, positions=None, offset=0)``: x ``[b, s, d]`` or ``[s, d]``;
    positions int32/float32 ``[s]`` or ``[b, s]``, default ``offset … offset+s-1``
    (``offset`` a static int, or a traced int32 scalar for decoding). Returns
    ``x + PE`` in x's dtype (float32 sum, rounded once).

    >>> pe = SinusoidalEmbedding(16)
    >>> pe(jnp.zeros((2, 5, 16))).shape
    (2, 5, 16)
    """

    def __init__(self, d_model: int, *, convention: AnyConvention = None,
                 **settings: Unpack[SinusoidSettings]) -> None:
        self.d_model = d_model
        self.settings = (convention, tuple(settings.items()))  # those passed only: beside a convention, none
        encode(jnp.zeros((1,), jnp.int32), d_model, convention=convention, **settings)

    def __call__(self, x: jax.Array, positions: Any = None, offset: Any = 0) -> jax.Array:
        x = float_array(x, "x")
        if x.ndim not in (2, 3) or x.shape[-1] != self.d_model:
            raise PosEncError(f"x must be [b, s, {self.d_model}] or [s, {self.d_model}], got shape {tuple(x.shape)}")
        if positions is None:
            positions = jnp.arange(x.shape[-2], dtype=jnp.int32) + jnp.asarray(offset, jnp.int32)
        convention, settings = self.settings
        pe = encode(positions, self.d_model, convention=convention, **cast("SinusoidSettings", dict(settings)))
        return (x.astype(jnp.float32) + pe).astype(x.dtype)

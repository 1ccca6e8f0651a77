"""Flax NNX modules: RoPE and the sinusoid, with no parameters and no tables in the state.

Each module holds only its static settings (validated once, at construction);
the rows are built inside the traced program by :mod:`posenc.jax._rows`, so
``nnx.state(module)`` is empty and ``nnx.jit`` / ``nnx.vmap`` see nothing to
carry. The layout of q and k is Flax's (MaxText, gemma): ``[b, s, n_h, h_d]``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal, cast

import jax.numpy as jnp
from flax import nnx

import jax

from ..errors import PosEncError
from ..rope.frequencies import RopeFrequencies
from ..rope.functions import check_xpos_of
from ..rope.spec import RopeConfig, RopeSettings, spec_in
from ..rope.tables import check_axes
from ..sinusoidal.conventions import AnyConvention, SinusoidSettings
from . import backend  # an attribute read per call: posenc.jax.backend may import first
from .rope import float_array, rotate, traced_frequencies
from .sinusoidal import encode

if TYPE_CHECKING:
    from typing_extensions import Unpack

    from ..rope.xpos import XPos

__all__ = ["RotaryEmbedding", "SinusoidalEmbedding"]


class RotaryEmbedding(nnx.Module):
    """Rotate queries and keys by their positions, exact rows built in the graph.

    Args:
        head_dim: a :class:`posenc.RopeConfig` (``posenc.from_hf_config(config)``,
            ``posenc.rope_preset``), which brings every setting it holds, the
            layout included; or channels per head, with the settings as keywords.
        seq_len: static; required for DynamicNTK and LongRoPE, and for xPos
            with ``center`` under ``jit`` (its centre c = seq_len//2; concrete
            positions default to max(positions) + 1, as NumPy). Default None.
        xpos: None (the default), or a :class:`posenc.XPos` (static), as
            ``posenc.torch.RotaryEmbedding(xpos=...)``: q is also scaled by
            ζ_i^((p − c)/scale_base) and k by its inverse, the rows of
            :func:`posenc.jax.apply_rope` with ``xpos=`` and ``role="q"`` /
            ``"k"`` (:mod:`posenc.jax._xpos`: NumPy's bits for concrete
            positions, rows built in the graph for traced ones), computed at
            each call, none held. Not with sections.
        **settings: without a spec, its fields, as :func:`posenc.jax.apply_rope`
            (:class:`~posenc.rope.spec.RopeSettings`: ``layout`` ``"half"``
            (HF, MaxText, gemma), ``"interleaved"`` (Meta, GPT-J) or
            ``"head_half"``; base, scaling, rotary_dim, the sections).

    Raises:
        PosEncError: for settings :func:`posenc.jax.apply_rope` refuses, a
            missing ``seq_len`` a scaling needs, an xpos that is no
            :class:`posenc.XPos`, or xpos with sections, at construction.

    ``__call__(q, k, positions)``: q ``[b, s, n_q, h_d]`` and k ``[b, s, n_kv, h_d]``
    (any float dtypes), positions int32/float32 ``[s]`` or ``[b, s]`` (with
    sections ``[s, n_axes]`` / ``[b, s, n_axes]``). Returns both rotated, each in
    its dtype; float32 math on the exact rows, rounded once (for float32 q
    and k, :func:`posenc.apply_rope`'s bits). The rows are computed once per
    position and shared by q, k and every head (with xpos, once per role).
    ``rotate(x, positions, role=None)`` rotates one of them (with xpos,
    ``role`` ``"q"`` or ``"k"``, as the torch module's ``rotate``).

    >>> import jax.numpy as jnp
    >>> import posenc
    >>> rope = RotaryEmbedding(posenc.RopeConfig(64, base=500000.0))
    >>> q, k = rope(jnp.ones((1, 8, 4, 64)), jnp.ones((1, 8, 2, 64)), jnp.arange(8))
    >>> q.shape, k.shape, nnx.state(rope) == nnx.State({})
    ((1, 8, 4, 64), (1, 8, 2, 64), True)

    A checkpoint's settings in one line (here a GPT-J-style interleaved layout):

    >>> cfg = posenc.RopeConfig(64, rotary_dim=32, layout="interleaved")
    >>> RotaryEmbedding(cfg).layout, RotaryEmbedding(cfg).rotary_dim
    ('interleaved', 32)

    xPos (c = seq_len//2 = 512; at p = 0 pair 0 of q grows by ζ_0**-1 = 3.5,
    of k shrinks by it), the bits of :func:`posenc.apply_rope` with ``role``:

    >>> import numpy as np
    >>> cfg = posenc.RopeConfig(4, base=100.0, layout="interleaved")
    >>> xrope = RotaryEmbedding(cfg, xpos=posenc.XPos(), seq_len=1025)
    >>> x = jnp.array([[[[1.0, 0.0, 0.0, 0.0]]]])                 # [b=1, s=1, n_h=1, h_d=4]
    >>> q, k = jax.jit(lambda a, p: xrope(a, a, p))(x, jnp.array([0]))
    >>> np.asarray(q, np.float64).round(4).ravel().tolist(), np.asarray(k, np.float64).round(4).ravel().tolist()
    ([3.5, 0.0, 0.0, 0.0], [0.2857, 0.0, 0.0, 0.0])
    >>> bool((np.asarray(xrope.rotate(x, jnp.array([700]), role="k"))[0, :, 0] == posenc.apply_rope(
    ...     np.asarray(x)[0, :, 0], [700], spec=cfg, xpos=posenc.XPos(), role="k", seq_len=1025)).all())
    True
    """

    def __init__(
        self,
        head_dim: int | RopeConfig,
        *,
        seq_len: int | None = None,
        xpos: Any = None,
        **settings: Unpack[RopeSettings],
    ) -> None:
        # every static argument checked now, once, by the spec the NumPy API builds; not at the first call
        self.spec = spec_in(head_dim, settings)
        self.head_dim, self.rotary_dim = self.spec.head_dim, int(self.spec.rotary_dim or self.spec.head_dim)
        self.layout = self.spec.layout
        self.seq_len = seq_len
        # the function's refusals (a non-XPos, xpos with sections), with the role each call gives
        self.xpos = check_xpos_of(self.spec, xpos, None if xpos is None else "q")
        self._frequencies()

    def _frequencies(self) -> RopeFrequencies:
        return traced_frequencies(self.spec, self.seq_len)

    def _positions(self, positions: Any, s: int, freqs: RopeFrequencies) -> jax.Array:
        """Positions ``[s]`` / ``[b, s]`` (``[..., n_axes]`` with sections), checked."""
        pos = backend.JAX.positions(positions)
        check_axes(pos, freqs.sections)
        lead = pos.shape if freqs.sections is None else pos.shape[:-1]
        if len(lead) not in (1, 2) or lead[-1] != s:
            raise PosEncError(f"positions must be [s] or [b, s] with s = {s}, got shape {tuple(pos.shape)}")
        backend.JAX.check_tables(tuple(pos.shape), self.spec, jnp.float32)
        return pos

    def _checked(self, name: str, x: Any) -> jax.Array:
        x = float_array(x, name)
        if x.ndim != 4 or x.shape[-1] != self.head_dim:
            raise PosEncError(f"{name} must be [b, s, n_h, {self.head_dim}], got shape {tuple(x.shape)}")
        return x

    def _xpos_rotated(self, x: jax.Array, pos: jax.Array, freqs: RopeFrequencies, role: str) -> jax.Array:
        """x rotated by the rows times xPos's factors for ``role``: :func:`posenc.jax.apply_rope`'s own rows."""
        jx = backend.JAX
        jx.check_output(x, tuple(pos.shape), self.spec, self.xpos)
        cos, sin = jx.xpos_cos_sin(pos, freqs, cast("XPos", self.xpos), role, self.seq_len, x)
        return rotate(x, cos[..., None, :], sin[..., None, :], self.layout, self.rotary_dim)

    def __call__(self, q: jax.Array, k: jax.Array, positions: Any) -> tuple[jax.Array, jax.Array]:
        freqs = self._frequencies()
        q, k = self._checked("q", q), self._checked("k", k)
        pos = self._positions(positions, q.shape[1], freqs)
        if self.xpos is not None:  # q scaled by ζ^(+…), k by ζ^(−…): rows of their own
            return self._xpos_rotated(q, pos, freqs, "q"), self._xpos_rotated(k, pos, freqs, "k")
        cos, sin = backend.JAX.cos_sin(pos, freqs, jnp.float32)  # [..., s, r/2], once for every head
        cos, sin = cos[..., None, :], sin[..., None, :]
        return (rotate(q, cos, sin, self.layout, self.rotary_dim),
                rotate(k, cos, sin, self.layout, self.rotary_dim))

    def rotate(self, x: jax.Array, positions: Any, *, role: Literal["q", "k"] | None = None) -> jax.Array:
        """Rotate one array, q or k ``[b, s, n_h, h_d]``; with xpos, ``role`` ``"q"`` or ``"k"`` (as torch's).

        Raises:
            PosEncError: as :meth:`__call__`; a role without xpos, or xpos
                without a role of ``"q"`` or ``"k"``.
        """
        x = self._checked("x", x)
        check_xpos_of(self.spec, self.xpos, role)
        freqs = self._frequencies()
        pos = self._positions(positions, x.shape[1], freqs)
        if self.xpos is not None:
            return self._xpos_rotated(x, pos, freqs, str(role))
        cos, sin = backend.JAX.cos_sin(pos, freqs, jnp.float32)
        return rotate(x, cos[..., None, :], sin[..., None, :], self.layout, self.rotary_dim)


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

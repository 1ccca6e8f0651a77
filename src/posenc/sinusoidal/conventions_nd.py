"""Presets that reproduce the n-D (2-D / 3-D) sine–cosine tables of existing frameworks, exactly.

An n-D sinusoid is a concatenation of 1-D sinusoids, one per coordinate:
every framework agrees on that much. They disagree on everything else —
which coordinate comes first (MAE and big_vision put the *column* first),
how many channels each axis gets, the exponent's denominator (``d/4`` or
``d/4 - 1``), and whether sin and cos interleave or come in halves. A
checkpoint works only with its own table, so each is a frozen dataclass
here, with the formula and the file it was read from in its docstring.

A preset only *plans*: :meth:`NdConvention.plan` says, for one ``d_model``
and number of axes, which channels hold which axis's sinusoid (a
:class:`Block` each). :func:`posenc.encode_nd` renders the plan through
:mod:`posenc.exact`, so every value is within 1 float32 ulp of the
preset's formula evaluated in exact arithmetic.

Coordinates are ``coords[..., k]`` for axis ``k`` in the order
:func:`posenc.grid` gives them: ``grid(h, w)`` has rows ``(i, j)`` = (row,
column).

>>> from posenc.sinusoidal import conventions_nd
>>> conventions_nd.NAMES
('axial', 'mae', 'big_vision', 'positional-encodings', 'timm')
>>> [(b.axis, b.start, b.width) for b in conventions_nd.get("mae").plan(16, 2).blocks]
[(1, 0, 8), (0, 8, 8)]
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from typing import TYPE_CHECKING, Any, ClassVar, Literal, TypedDict

from ..errors import PosEncError, check_base, check_channels, check_int, show_value
from ..exact import Ladder, geometric_ladder
from ..registry import Registry, checked_results
from ..support.arguments import set_fields, settings_of
from ..support.vocabulary import ChannelLayout

if TYPE_CHECKING:
    from typing_extensions import Unpack  # typing's from Python 3.11; only read by the type checker

__all__ = [
    "MAE",
    "NAMES",
    "Axial",
    "AxialSettings",
    "BigVision",
    "Block",
    "NdConvention",
    "NdConventionName",
    "NdPlan",
    "PositionalEncodingsND",
    "Timm",
    "get",
    "register_nd",
    "resolve",
]


@dataclass(frozen=True, eq=False)
class Block:
    """One axis's 1-D sinusoid inside an n-D encoding.

    The block's frequencies ω_k (``ladder``) give ``2·len(ladder)`` channels,
    sin(c·ω_k) and cos(c·ω_k) of the coordinate ``c = coords[..., axis]``,
    placed by ``layout`` (``"interleaved"``: sin at 2k, cos at 2k+1;
    ``"split"``: every sine, then every cosine); the first ``width`` of them
    land in channels ``start … start+width-1`` of the output.

    Attributes:
        axis: the coordinate the block encodes.
        start: its first output channel.
        ladder: its frequencies.
        layout: ``"interleaved"`` or ``"split"``.
        width: channels kept (``<= 2·len(ladder)``; fewer when the
            framework cuts its table to ``d_model``).
    """

    axis: int
    start: int
    ladder: Ladder
    layout: ChannelLayout
    width: int

    @property
    def channels(self) -> range:
        """The output channels this block fills."""
        return range(self.start, self.start + self.width)


@dataclass(frozen=True, eq=False)
class NdPlan:
    """What an n-D convention resolves to for one ``d_model`` and number of axes.

    Channels no block covers are zero. A plan whose framework mixes the
    axes' channels (timm's ``[sin_h, sin_w, cos_h, cos_w]``) lays its blocks
    out contiguously and names the permutation that makes its order.

    Attributes:
        d_model: output channels.
        n_axes: coordinates per point.
        blocks: the axes' sinusoids, in channel order (before ``order``).
        order: None, or output channel j holds the blocks' channel ``order[j]``.
    """

    d_model: int
    n_axes: int
    blocks: tuple[Block, ...]
    order: tuple[int, ...] | None = None


@checked_results(plan=NdPlan)  # a user's plan() returning junk: a PosEncError naming the preset, at the call
class NdConvention:
    """Base of the n-D presets. Subclasses are frozen dataclasses that implement :meth:`plan`."""

    name: ClassVar[str] = ""
    #: numbers of axes the framework defines (None: any)
    axes: ClassVar[tuple[int, ...] | None] = None

    def plan(self, d_model: Any, n_axes: Any) -> NdPlan:
        """Validate ``d_model`` and ``n_axes`` for this convention and return its :class:`NdPlan`."""
        d = check_channels(d_model)
        n = check_int(n_axes, "the number of axes (coords.shape[-1])", minimum=1)
        if self.axes is not None and n not in self.axes:
            allowed = " or ".join(map(str, self.axes))
            raise PosEncError(
                f"the {self.name!r} convention defines {allowed}-axis grids only, got {n} axes "
                f"(coords.shape[-1] = {n})"
            )
        return NdPlan(d, n, self._blocks(d, n), self._order(d))

    def _blocks(self, d: int, n: int) -> tuple[Block, ...]:
        raise NotImplementedError

    def _order(self, d: int) -> tuple[int, ...] | None:
        return None


def _quarter(name: str, d: int, minimum: int) -> int:
    """d/4 for the two-axis [sin | cos] presets: each axis gets d/2 channels, d/4 frequencies."""
    if d % 4 or d < minimum:
        raise PosEncError(
            f"the {name!r} convention needs d_model divisible by 4 (each of the 2 axes gets d/2 channels, "
            f"sin and cos of d/4 frequencies) and >= {minimum}, got d_model={d}"
        )
    return d // 4


@dataclass(frozen=True)
class Axial(NdConvention):
    """posenc's default: the seed's encoding per axis, axis by axis.

    Each of the n axes gets ``s = d_model / n`` channels holding the seed's
    interleaved encoding of its coordinate on its own ladder,
    ω_i = base^(-2i/s), i < s/2: channels ``k·s … (k+1)·s - 1`` encode
    ``coords[..., k]``. With one axis this is :func:`posenc.encode` itself.
    ``s`` must be an even integer (each frequency fills a (sin, cos) pair).
    """

    name: ClassVar[str] = "axial"

    base: float = 10000.0  # b in ω_i = b^(-2i/s), s = d_model / n_axes channels per axis

    def __post_init__(self) -> None:
        set_fields(self, base=check_base(self.base))

    def _blocks(self, d: int, n: int) -> tuple[Block, ...]:
        if d % n or (d // n) % 2:
            raise PosEncError(
                f"d_model must split into {n} even shares (one per axis, each (sin, cos) pairs), "
                f"got d_model={d}: {d} / {n} = {d / n:g}"
            )
        s = d // n
        lad = geometric_ladder(s // 2, self.base, Fraction(s // 2))
        return tuple(Block(k, k * s, lad, "interleaved", s) for k in range(n))


class AxialSettings(TypedDict, total=False):
    """The settings of the default n-D encoding as keywords: ``encode_nd(c, d, **settings)`` is ``Axial(**settings)``.

    Taken as ``**settings: Unpack[AxialSettings]`` by every n-D entry point
    (``encode_nd``, ``grid_report``, ``grid_similarity``, their JAX and plot
    forms); the default is :class:`Axial`'s field. Beside a ``convention``
    (which carries its own base) it is refused.
    """

    base: float  # b in ω_i = b^(-2i/s) (Axial.base: 10000.0)


@dataclass(frozen=True)
class MAE(NdConvention):
    """MAE's ``get_2d_sincos_pos_embed`` (also DiT, and many ViT forks).

    Source: facebookresearch/mae ``util/pos_embed.py``
    (``get_2d_sincos_pos_embed``, ``get_2d_sincos_pos_embed_from_grid``,
    ``get_1d_sincos_pos_embed_from_grid``; read at a9f5c70). The 1-D part
    for ``D = d/2`` channels is ``[sin(c·ω) | cos(c·ω)]`` with
    ω_k = 10000^(-k/(D/2)) = 10000^(-k/(d/4)), k < d/4 (halves, not
    interleaved). The grid is ``meshgrid(grid_w, grid_h)``, so ``grid[0]`` —
    the one encoded into the *first* half, though the code calls it
    ``emb_h`` — is the column coordinate w: here ``coords[..., 1]``. The
    second half encodes the row, ``coords[..., 0]``. Rows come in C order
    over (h, w), as :func:`posenc.grid` gives them.

    ``d_model`` must be divisible by 4 (MAE asserts evenness of both halves).
    MAE computes in float64 (``np.float`` in the original; a later edit makes
    ω float32) and the model casts to float32; this preset is the formula
    exact. MAE's ``cls_token=True`` (a zero row first) is
    ``encode_nd(..., cls_token=True)``.
    """

    name: ClassVar[str] = "mae"
    axes: ClassVar[tuple[int, ...] | None] = (2,)

    base: float = 10000.0  # MAE's fixed 10000: ω_k = base^(-k/(d/4))

    def __post_init__(self) -> None:
        set_fields(self, base=check_base(self.base))

    def _blocks(self, d: int, n: int) -> tuple[Block, ...]:
        q = _quarter(self.name, d, 4)
        lad = geometric_ladder(q, self.base, Fraction(q))
        return (Block(1, 0, lad, "split", d // 2), Block(0, d // 2, lad, "split", d // 2))


@dataclass(frozen=True)
class BigVision(NdConvention):
    """big_vision's ``posemb_sincos_2d`` (and lucidrains' SimpleViT, which follows it).

    Source: google-research/big_vision ``big_vision/models/vit.py``
    (``posemb_sincos_2d(h, w, width, temperature=10_000.)``, read at
    0b73d7b): ``y, x = mgrid[:h, :w]``; ω_k = temperature^(-k/(d/4 - 1)),
    k < d/4 — the denominator is ``d/4 - 1``, so the slowest frequency is
    exactly 1/temperature —; output ``[sin(x·ω), cos(x·ω), sin(y·ω),
    cos(y·ω)]`` with x the column (``coords[..., 1]``) and y the row
    (``coords[..., 0]``). Computed in float32 in JAX there; exact here.

    ``d_model`` must be divisible by 4 and at least 8: at 4 the exponent
    divides by d/4 - 1 = 0 (NaN in big_vision).
    """

    name: ClassVar[str] = "big_vision"
    axes: ClassVar[tuple[int, ...] | None] = (2,)

    temperature: float = 10000.0  # ω_k = temperature^(-k/(d/4 - 1))

    def __post_init__(self) -> None:
        set_fields(self, temperature=check_base(self.temperature, "temperature"))

    def _blocks(self, d: int, n: int) -> tuple[Block, ...]:
        q = _quarter(self.name, d, 8)
        lad = geometric_ladder(q, self.temperature, Fraction(q - 1))
        return (Block(1, 0, lad, "split", d // 2), Block(0, d // 2, lad, "split", d // 2))


@dataclass(frozen=True)
class PositionalEncodingsND(NdConvention):
    """The ``positional-encodings`` package's ``PositionalEncoding1D``/``2D``/``3D``.

    Source: tatp22/multidim-positional-encoding
    ``positional_encodings/torch_encodings.py`` (read at 00521a5; PyPI
    6.0.3). For n axes each gets ``C = 2·ceil(d/(2n))`` channels (the code's
    ``ceil(ch/4)·2`` for 2-D, ``ceil(ch/6)·2`` for 3-D, ``ceil(ch/2)·2`` for
    1-D), ω_i = 10000^(-2i/C), i < C/2, sin and cos interleaved
    (``stack((sin, cos), -1).flatten(-2, -1)``); axis k fills channels
    ``k·C … (k+1)·C - 1`` — axis 0 (the tensor's x, the first grid axis)
    first — and the whole is cut to the first d channels. So when d is not
    a multiple of 2n the last axis gets fewer channels (possibly only a
    sine), or none. Positions are ``arange`` per axis; float32 there.
    """

    name: ClassVar[str] = "positional-encodings"
    axes: ClassVar[tuple[int, ...] | None] = (1, 2, 3)

    def _blocks(self, d: int, n: int) -> tuple[Block, ...]:
        c = 2 * math.ceil(d / (2 * n))
        lad = geometric_ladder(c // 2, 10000.0, Fraction(c // 2))
        return tuple(
            Block(k, k * c, lad, "interleaved", min(c, d - k * c)) for k in range(n) if k * c < d
        )


@dataclass(frozen=True)
class Timm(NdConvention):
    """timm's ``build_sincos2d_pos_embed``: ``[sin_h, sin_w, cos_h, cos_w]``.

    Source: huggingface/pytorch-image-models ``timm/layers/pos_embed_sincos.py``
    (``freq_bands``, ``build_sincos2d_pos_embed``; read at 0647e28).
    ``pos_dim = dim // 4`` bands ``freq_bands(pos_dim, temperature, step=1)``
    = 1/temperature^(k/pos_dim), k < d/4 — MAE's ladder —; the grid is
    ``ndgrid(arange(H), arange(W))`` stacked (h, w) and flattened, the angles
    ``[HW, 2, d/4]``, and ``stack([sin, cos], dim=1).flatten(1)`` orders the
    channels ``[sin(h·ω) | sin(w·ω) | cos(h·ω) | cos(w·ω)]``, the row
    (``coords[..., 0]``) first. timm computes in float32; exact here.

    ``interleave_sin_cos=True`` stacks on dim 2 instead: ``[sin(h·ω) |
    cos(h·ω) | sin(w·ω) | cos(w·ω)]`` (each axis's ``[sin | cos]`` halves,
    not channel-interleaved).
    ``reverse_coord=True`` reverses ``feat_shape``, so the column
    (``coords[..., 1]``) comes first in the channels — and, in timm, in the
    rows too: timm's table for ``[H, W]`` is then
    ``encode_nd(grid(W, H)[:, ::-1], d, convention=Timm(reverse_coord=True))``.
    ``d_model`` must be divisible by 4 (timm asserts it).

    >>> Timm().plan(8, 2).order
    (0, 1, 4, 5, 2, 3, 6, 7)
    """

    name: ClassVar[str] = "timm"
    axes: ClassVar[tuple[int, ...] | None] = (2,)

    temperature: float = 10000.0  # ω_k = 1/temperature^(k/(d/4)), timm's freq_bands(d // 4, step=1)
    reverse_coord: bool = False  # timm's: the column (w) first
    interleave_sin_cos: bool = False  # timm's: [sin_h | cos_h | sin_w | cos_w] instead

    def __post_init__(self) -> None:
        set_fields(self, temperature=check_base(self.temperature, "temperature"))
        for name in ("reverse_coord", "interleave_sin_cos"):
            if not isinstance(getattr(self, name), bool):
                raise PosEncError(f"{name} must be True or False, got {show_value(getattr(self, name))}")

    def _blocks(self, d: int, n: int) -> tuple[Block, ...]:
        q = _quarter(self.name, d, 4)
        lad = geometric_ladder(q, self.temperature, Fraction(q))
        first, second = (1, 0) if self.reverse_coord else (0, 1)
        return (Block(first, 0, lad, "split", d // 2), Block(second, d // 2, lad, "split", d // 2))

    def _order(self, d: int) -> tuple[int, ...] | None:
        if self.interleave_sin_cos:
            return None  # the blocks' own order
        q = d // 4  # blocks [sin_a | cos_a | sin_b | cos_b] -> [sin_a | sin_b | cos_a | cos_b]
        return (*range(0, q), *range(2 * q, 3 * q), *range(q, 2 * q), *range(3 * q, 4 * q))


_PRESETS = Registry[NdConvention]("an n-D preset (posenc.sinusoidal.conventions_nd)", NdConvention,
                                  {c.name: c for c in (Axial, MAE, BigVision, PositionalEncodingsND, Timm)})

#: The n-D preset names :func:`get` knows.
NAMES = tuple(_PRESETS)
#: The built-in n-D preset names as a type (an editor completes them; :data:`NAMES` is the tuple, checked equal).
NdConventionName = Literal["axial", "mae", "big_vision", "positional-encodings", "timm"]
#: What an n-D ``convention=`` takes: None (:class:`Axial`), a built-in name, a preset (or its class); a name
#: registered since works too.
AnyNdConvention = NdConventionName | NdConvention | type[NdConvention] | None


def get(convention: Any) -> NdConvention:
    """An n-D preset by name (its default settings), or the given preset unchanged.

    >>> get("big_vision")
    BigVision(temperature=10000.0)
    """
    return _PRESETS.get(convention, "convention")


def register_nd(name: str, preset: Any) -> None:
    """Make ``encode_nd(..., convention=name)`` (and ``grid``) use ``preset``, an n-D preset or a factory of one.

    What :func:`posenc.register_convention` does with an n-D preset.
    """
    _PRESETS.register(name, preset)


def resolve(convention: AnyNdConvention = None, /, where: str = "resolve",
            **settings: Unpack[AxialSettings]) -> NdConvention:
    """The preset an ``encode_nd(..., convention=, **settings)`` call means.

    ``None`` is :class:`Axial` with the settings given; a preset carries its
    own base, so a ``base`` passed beside one (even 10000.0) is an error, not
    silently ignored. ``where`` names the entry point in the message about an
    unknown keyword.

    >>> resolve(None, base=100.0)
    Axial(base=100.0)
    """
    chosen = settings_of(settings, AxialSettings, where)
    if convention is None:
        return Axial(**chosen)
    conv = get(convention)
    if chosen:
        raise PosEncError(
            f"base is part of the convention; got base={show_value(chosen['base'])} with convention {conv!r} "
            "(set it on the preset, e.g. MAE(base=...))"
        )
    return conv

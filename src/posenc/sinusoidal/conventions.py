"""Presets that reproduce the sinusoidal tables of existing frameworks, exactly.

"The sinusoidal encoding" was built differently by each framework whose
checkpoints people load: the exponent's denominator, the channel layout, the
position of the first token and the handling of odd ``d_model`` all vary
(see docs/explanation/conventions.md). Each preset below is a frozen
dataclass whose docstring gives the formula and the file it was read from;
its values are within 1 float32 ulp of that formula evaluated in exact
arithmetic (frequencies from :mod:`posenc.exact` at ~160 bits, positions
never rounded), so a posenc table can stand in for the framework's own.

Positions are token positions, 0 for the first token, as everywhere in
posenc; a preset's ``origin`` says which angle the framework gives that
token (fairseq's first token sits at ``padding_idx + 1``).

Use a preset through :func:`posenc.encode` / :func:`posenc.table` (``convention=``), through
:class:`posenc.torch.SinusoidalPositionalEncoding`, or directly:

>>> from posenc import conventions
>>> conventions.get("fairseq").table(2, 4, dtype=np.float64).round(4).tolist()
[[0.9093, 0.0002, -0.4161, 1.0], [0.1411, 0.0003, -0.99, 1.0]]
>>> conventions.NAMES
('vaswani', 'tensor2tensor', 'fairseq', 'hf-marian', 'keras', 'positional-encodings')
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from fractions import Fraction
from typing import TYPE_CHECKING, Any, ClassVar, Literal, TypedDict

import numpy as np

from ..errors import (
    MAX_ANGLE,
    MAX_POSITION,
    MIN_FREQUENCY,
    PosEncError,
    check_base,
    check_channels,
    check_d_model,
    check_int,
    check_real,
)
from ..exact import Ladder, geometric_ladder, ladder_digits, seed_ladder
from ..registry import Registry, checked_results
from ..support.arguments import given, set_fields, settings_of
from ..support.layout import check_channel_layout
from ..support.vocabulary import ChannelLayout
from .functions import encode_with, table_with
from .numpy_backend import NUMPY_ENCODING
from .plan import Plan

if TYPE_CHECKING:
    from typing_extensions import Unpack  # typing's from Python 3.11; only read by the type checker

__all__ = [
    "NAMES",
    "Convention",
    "ConventionName",
    "Fairseq",
    "HFMarian",
    "Keras",
    "Plan",
    "PositionalEncodings",
    "SinusoidSettings",
    "Tensor2Tensor",
    "Vaswani",
    "get",
    "register_convention",
    "resolve",
    "seed_settings",
]


@checked_results(plan=Plan)  # a user's plan() returning junk: a PosEncError naming the preset, at the call
class Convention:
    """Base of the presets: turns a :class:`Plan` into values (subclasses: frozen dataclasses with :meth:`plan`)."""

    name: ClassVar[str] = ""

    def plan(self, d_model: Any) -> Plan:
        """Validate ``d_model`` for this convention and return its :class:`Plan`."""
        raise NotImplementedError

    def encode(self, positions: Any, d_model: Any, *, dtype: Any = np.float32) -> np.ndarray:
        """The convention's encoding of each token position, ``[..., d_model]``.

        Raises:
            PosEncError: for bad positions, a ``d_model`` the convention cannot
                take, or a bad dtype, before any work.
        """
        return encode_with(NUMPY_ENCODING, self, positions, d_model, dtype)

    def table(self, length: Any, d_model: Any, *, start: Any = 0, dtype: Any = np.float32) -> np.ndarray:
        """Rows for token positions ``start … start+length-1``, ``[length, d_model]``.

        Equal to ``encode(np.arange(start, start + length), d_model)``.
        """
        return table_with(NUMPY_ENCODING, self, length, d_model, start, dtype)


@dataclass(frozen=True)
class Vaswani(Convention):
    """The paper's encoding (the seed's): ω_i = base^(-2i/d), i < d/2.

    PE(p, 2i) = sin(ω_i p), PE(p, 2i+1) = cos(ω_i p) with ``layout="interleaved"``
    (Vaswani et al. 2017, §3.5; pytorch/tutorials
    ``beginner_source/transformer_tutorial.py``, harvardnlp/annotated-transformer
    ``the_annotated_transformer.py``), or all sines then all cosines with
    ``"split"``. Positions start at 0. Odd ``d_model`` raises (the tutorial's
    code fails on it too).
    """

    name: ClassVar[str] = "vaswani"

    base: float = 10000.0  # b in ω_i = b^(-2i/d); the paper's 10000
    layout: ChannelLayout = "interleaved"  # sin at 2i, cos at 2i+1; "split": [sin | cos]

    def __post_init__(self) -> None:
        set_fields(self, base=check_base(self.base))
        check_channel_layout(self.layout)

    def plan(self, d_model: Any) -> Plan:
        d = check_d_model(d_model)
        return Plan(seed_ladder(d, self.base), self.layout, d)


class SinusoidSettings(TypedDict, total=False):
    """The settings of the seed's formula, as keywords: ``encode(p, d, **settings)`` means ``Vaswani(**settings)``.

    Every sinusoid entry point taking them (NumPy, torch, JAX, the plots)
    takes ``**settings: Unpack[SinusoidSettings]``; their defaults are
    :class:`Vaswani`'s fields alone. A name outside these two is refused,
    and beside a ``convention`` (which carries its own) so is either one.
    """

    base: float  # b in ω_i = b^(-2i/d) (Vaswani.base: 10000.0)
    layout: ChannelLayout  # "interleaved" (Vaswani.layout) or "split"


@functools.lru_cache(maxsize=64)
def _t2t_ladder(n: int, min_timescale: float, max_timescale: float) -> Ladder:
    lo = Fraction(min_timescale)  # exact, as every float
    return Ladder.from_decimals(ladder_digits(n, Fraction(max_timescale) / lo, max(n - 1, 1), lo))


@dataclass(frozen=True)
class Tensor2Tensor(Convention):
    """tensor2tensor's ``get_timing_signal_1d``.

    Source: tensorflow/tensor2tensor ``tensor2tensor/layers/common_attention.py``
    (``get_timing_signal_1d``, read at bafdc1b). With n = d // 2 timescales,

        ω_k = min_timescale · exp(-k · ln(max_timescale / min_timescale) / max(n - 1, 1)),

    k = 0 … n-1, layout ``[sin | cos]``, and one zero channel appended when
    d is odd. The token at index t has angle (t + start_index)·ω_k.

    The code *multiplies* by ``min_timescale`` (ω_0 = min_timescale), so for
    min_timescale ≠ 1 the timescales 1/ω run from 1/min to max/min², not
    the documented min … max (tensor2tensor#177); this preset reproduces the
    code.
    The ``max(n - 1, 1)`` guard makes d = 2 and 3 well defined (ω_0 = min).
    """

    name: ClassVar[str] = "tensor2tensor"

    min_timescale: float = 1.0  # ω_0 = min_timescale (the code multiplies by it)
    max_timescale: float = 1.0e4  # ω_last = min² / max
    start_index: int = 0  # angle of the first token (the function's start_index argument)

    def __post_init__(self) -> None:
        for field in ("min_timescale", "max_timescale"):
            v = check_real(getattr(self, field), field)
            if v <= 0:
                raise PosEncError(f"{field} must be > 0, got {v}")
            set_fields(self, **{field: v})
        bound = int(MAX_POSITION) - 1
        set_fields(self, start_index=check_int(self.start_index, "start_index", minimum=-bound, maximum=bound))
        # ω runs from min_timescale down to min²/max: both must lie where the exact path is exact
        first = math.log2(self.min_timescale)
        last = 2 * first - math.log2(self.max_timescale)
        if not (math.log2(MIN_FREQUENCY) <= min(first, last) and max(first, last) < math.log2(MAX_ANGLE)):
            raise PosEncError(
                f"min_timescale={self.min_timescale!r} and max_timescale={self.max_timescale!r} give frequencies "
                f"from 2**{first:.4g} to 2**{last:.4g}; they must lie in [2**-960, 2**53)"
            )

    def plan(self, d_model: Any) -> Plan:
        d = check_channels(d_model)
        lad = _t2t_ladder(d // 2, self.min_timescale, self.max_timescale)
        return Plan(lad, "split", d, origin=self.start_index)


@dataclass(frozen=True)
class Fairseq(Convention):
    """fairseq's ``SinusoidalPositionalEmbedding`` (also HF Speech2Text's copy).

    Source: facebookresearch/fairseq ``fairseq/modules/sinusoidal_positional_embedding.py``
    (``get_embedding``) and ``fairseq/utils.py`` (``make_positions``). With
    h = d // 2,

        ω_k = exp(-k · ln(10000) / (h - 1)) = 10000^(-k/(h-1)),   k = 0 … h-1,

    layout ``[sin | cos]``, one zero channel appended when d is odd. Table
    row r has angle r; the token at index t (counting non-padding tokens
    from 0) reads row ``padding_idx + 1 + t``, and row ``padding_idx`` is
    all zeros, so here token position -1 (where a left-padded batch puts its
    padding: positions = cumsum(mask)·mask - 1) encodes to zeros.

    d = 2 and 3 divide by h - 1 = 0 in fairseq (ZeroDivisionError); they
    raise :class:`~posenc.PosEncError` here.
    """

    name: ClassVar[str] = "fairseq"

    padding_idx: int = 1  # the dictionary's pad index; fairseq's default dictionary uses 1

    def __post_init__(self) -> None:
        # its padding row is a position, padding_idx + 1 the first token's: both below 2**53
        last = int(MAX_POSITION) - 2
        set_fields(self, padding_idx=check_int(self.padding_idx, "padding_idx", minimum=0, maximum=last))

    def plan(self, d_model: Any) -> Plan:
        d = check_channels(d_model)
        h = d // 2
        if h == 1:
            raise PosEncError(
                f"fairseq needs d_model >= 4 or d_model = 1: its exponent divides by "
                f"half_dim - 1 = {d} // 2 - 1 = 0, got d_model={d}"
            )
        lad = geometric_ladder(h, 10000.0, Fraction(max(h - 1, 1)))
        return Plan(lad, "split", d, origin=self.padding_idx + 1, zero_at=self.padding_idx)


@dataclass(frozen=True)
class HFMarian(Convention):
    """Hugging Face ``MarianSinusoidalPositionalEmbedding``.

    Source: huggingface/transformers ``src/transformers/models/marian/modeling_marian.py``
    (``_init_weight``, read at 00b676f): channel j has angle
    t / 10000^(2·(j // 2) / d) (computed in float64), and the table keeps the
    even-j channels as sines then the odd-j ones as cosines. So with
    ω_i = 10000^(-2i/d), layout ``[sin | cos]`` with ceil(d/2) sines and
    floor(d/2) cosines: an odd d gives the sines the extra channel.
    Positions start at 0 (``past_key_values_length`` or ``position_ids``).
    """

    name: ClassVar[str] = "hf-marian"

    def plan(self, d_model: Any) -> Plan:
        d = check_channels(d_model)
        return Plan(geometric_ladder((d + 1) // 2, 10000.0, Fraction(d, 2)), "split", d)


@dataclass(frozen=True)
class Keras(Convention):
    """keras-hub ``SinePositionEncoding``.

    Source: keras-team/keras-hub ``keras_hub/src/layers/modeling/sine_position_encoding.py``
    (read at 71453d0): channel j uses (1 / max_wavelength)^(2·(j // 2) / d),
    sine on even j, cosine on odd j. So ω_i = max_wavelength^(-2i/d),
    interleaved, and an odd d ends with a sine. Positions start at 0
    (``start_index`` or ``positions`` shift them).
    """

    name: ClassVar[str] = "keras"

    max_wavelength: float = 10000.0  # the base: ω_i = max_wavelength^(-2i/d)

    def __post_init__(self) -> None:
        set_fields(self, max_wavelength=check_base(self.max_wavelength, "max_wavelength"))

    def plan(self, d_model: Any) -> Plan:
        d = check_channels(d_model)
        return Plan(geometric_ladder((d + 1) // 2, self.max_wavelength, Fraction(d, 2)), "interleaved", d)


@dataclass(frozen=True)
class PositionalEncodings(Convention):
    """The ``positional-encodings`` package's ``PositionalEncoding1D``.

    Source: tatp22/multidim-positional-encoding
    ``positional_encodings/torch_encodings.py`` (read at efeb8d9): the
    channel count is padded to even, C = 2·ceil(d/2); ω_i = 10000^(-2i/C),
    i < C/2; sin and cos interleaved; then truncated to the first d
    channels (an odd d drops the last cosine). Positions start at 0.
    """

    name: ClassVar[str] = "positional-encodings"

    def plan(self, d_model: Any) -> Plan:
        d = check_channels(d_model)
        n = (d + 1) // 2
        return Plan(geometric_ladder(n, 10000.0, Fraction(n)), "interleaved", d)


# the presets by name: the built-ins and those register_convention adds; every entry point taking convention=
# looks a name up here, so a registered preset works wherever a built-in does (encode, table, grid, torch)
#: The presets :func:`get` knows by name: the built-ins, then any :func:`register_convention` adds.
_PRESETS = Registry[Convention]("a posenc.conventions preset", Convention,
                                {c.name: c for c in (Vaswani, Tensor2Tensor, Fairseq, HFMarian, Keras,
                                                     PositionalEncodings)})

#: The built-in preset names (:func:`get` also knows those registered since).
NAMES = tuple(_PRESETS)

#: The built-in preset names as a type (an editor completes them; :data:`NAMES` is the tuple, checked equal).
ConventionName = Literal["vaswani", "tensor2tensor", "fairseq", "hf-marian", "keras", "positional-encodings"]
#: What a ``convention=`` argument takes: None (the seed's formula), a built-in name, a preset (or its class).
#: A name registered since (:func:`register_convention`) works too; the type names the built-ins.
AnyConvention = ConventionName | Convention | type[Convention] | None


def register_convention(name: str, preset: Any) -> None:
    """Make ``encode(..., convention=name)`` (and every entry point taking a convention) use ``preset``.

    Args:
        name: the new name, 1 to 64 ASCII letters, digits, ``_ . + -``, a letter or
            digit first (:func:`posenc.registry.check_name`); a name is registered
            once (the built-ins' included).
        preset: a :class:`Convention` (frozen, so one instance serves every
            call), or a callable returning one (a preset class at its
            defaults); or an n-D preset
            (:class:`~posenc.sinusoidal.conventions_nd.NdConvention`, or its
            class), which ``encode_nd`` and ``grid`` then find by ``name``.

    >>> register_convention("doc-base-100", Vaswani(base=100.0))
    >>> get("doc-base-100")
    Vaswani(base=100.0, layout='interleaved')
    """
    from .conventions_nd import NdConvention, register_nd  # the n-D family sits above this one

    if isinstance(preset, NdConvention) or (isinstance(preset, type) and issubclass(preset, NdConvention)):
        register_nd(name, preset)
        return
    _PRESETS.register(name, preset)


def get(convention: Any) -> Convention:
    """A preset by name (its default settings), or the given preset unchanged.

    >>> get("keras")
    Keras(max_wavelength=10000.0)
    >>> get(Fairseq(padding_idx=0)).padding_idx
    0
    """
    return _PRESETS.get(convention, "convention")


def seed_settings(settings: SinusoidSettings, where: str) -> tuple[Any, Any]:
    """``(base, layout)`` of the settings given, :class:`Vaswani`'s defaults for those left out (not yet checked).

    For the entry points of the seed's formula alone (``shift``, ``aliasing``, ...), which check them in turn.

    >>> seed_settings({"layout": "split"}, "shift")
    (10000.0, 'split')
    """
    chosen = settings_of(settings, SinusoidSettings, where)
    return chosen.get("base", Vaswani.base), chosen.get("layout", Vaswani.layout)


def resolve(convention: AnyConvention = None, /, where: str = "resolve",
            **settings: Unpack[SinusoidSettings]) -> Convention:
    """The convention an entry point with (convention, ``**settings``) arguments means.

    ``convention=None`` is the seed's formula, :class:`Vaswani` with the
    settings given (its defaults for those left out). A preset carries its
    own base and layout, so a setting passed alongside one (even at the
    default value) is an error rather than silently ignored. ``where`` names
    the entry point in the message about an unknown keyword.

    >>> resolve(None, base=100.0, layout="split")
    Vaswani(base=100.0, layout='split')
    >>> resolve("keras")
    Keras(max_wavelength=10000.0)
    """
    chosen = settings_of(settings, SinusoidSettings, where)
    if convention is None:
        return Vaswani(**chosen)
    conv = get(convention)
    if chosen:
        raise PosEncError(
            f"base and layout are part of the convention {conv!r}; got {given(chosen, SinusoidSettings)} (pass the "
            "convention alone, or set them on the preset, e.g. Vaswani(base=..., layout=...))"
        )
    return conv

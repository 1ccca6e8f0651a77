"""The RoPE spec: one frozen :class:`RopeConfig` holds a rotation's frequencies and pair layout, checked once.

Every RoPE entry point (:func:`posenc.rope_frequencies`, :func:`posenc.rope_cos_sin`,
:func:`posenc.apply_rope`, the JAX and torch forms and modules) takes one a
caller built (``spec=``, or in ``head_dim``'s place: from
:func:`posenc.from_hf_config`, :func:`posenc.rope_preset` or by hand), or
builds one from its keyword settings, declared once as :class:`RopeSettings`
(``**settings: Unpack[RopeSettings]``), and then checks only what the call
adds: x and the positions. So a setting is validated in one place, here,
whatever the entry point, and its default is written in one place,
:class:`RopeConfig`'s field.

>>> cfg = RopeConfig(64, base=500000.0)
>>> cfg.rotary_dim, cfg.layout, cfg.multi_axis
(64, 'half', None)
>>> RopeConfig(8, sections=(2, 2), ladder="per_axis").multi_axis
Sections(sizes=(2, 2), layout='contiguous', ladder='per_axis')
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, TypedDict

from ..errors import MAX_POSITION, PosEncError, check_base, check_d_model, check_int, show_value
from ..support.arguments import set_fields
from ..support.concurrency import BoundedCache
from ..support.layout import check_rope_layout
from ..support.vocabulary import LadderSharing, RopeLayout, SectionLayout
from .registry import is_scaling
from .scaling import SCALINGS
from .sections import Sections, check_sections

__all__ = [
    "FREQUENCY_SETTINGS",
    "LADDER_SETTINGS",
    "ROPE_SETTINGS",
    "RopeConfig",
    "RopeFrequencySettings",
    "RopeLadderSettings",
    "RopeSettings",
    "check_dims",
    "check_multi_axis",
    "check_scaling",
    "rope_spec",
    "settings_spec",
    "spec_in",
]


def check_scaling(scaling: Any) -> None:
    """None, a built-in variant, or any hashable object with ``scale`` and ``cache_key`` (a registered one)."""
    if scaling is not None and not isinstance(scaling, SCALINGS) and not is_scaling(scaling):
        names = ", ".join(c.__name__ for c in SCALINGS)
        if isinstance(scaling, Mapping):
            # a transformers rope_scaling / rope_parameters dict: its keys depend on the rest of the config
            # (head_dim, max_position_embeddings), so it is read with the whole config, never guessed here
            raise PosEncError(
                f"scaling must be one of {names} (posenc.rope.scaling), not a dict: a transformers rope_scaling "
                "is read with its whole config by posenc.from_hf_config(config), whose RopeConfig goes in "
                f"head_dim's place or as spec=; got {show_value(scaling)}"
            )
        raise PosEncError(
            f"scaling must be None, one of {names} (posenc.rope.scaling), or a hashable object with "
            f"scale() and cache_key() (posenc.register_scaling), got {scaling!r}"[:300]
        )


def check_dims(head_dim: Any, rotary_dim: Any) -> tuple[int, int]:
    """(head_dim, rotary_dim): positive even integers, rotary_dim <= head_dim (default head_dim)."""
    h = check_d_model(head_dim, "head_dim")
    if rotary_dim is None:
        return h, h
    r = check_d_model(rotary_dim, "rotary_dim")
    if r > h:
        raise PosEncError(f"rotary_dim must be <= head_dim = {show_value(h)}, got {show_value(r)}")
    return h, r


def check_multi_axis(sections: Sections | None, rotary_dim: int, scaling: Any) -> None:
    """Sections must cover the rotary pairs exactly; per-axis ladders take no scaling."""
    if sections is None:
        return
    if sections.pairs != rotary_dim // 2:
        raise PosEncError(
            f"sections {sections.shown} hold {sections.pairs} pairs; the rotary dimension {rotary_dim} has "
            f"{rotary_dim // 2} (sections count pairs: they sum to rotary_dim / 2)"
        )
    if sections.ladder == "per_axis" and scaling is not None:
        raise PosEncError(
            f"ladder='per_axis' takes no scaling (each axis has its own ladder), got {scaling!r}"[:300]
        )


class RopeLadderSettings(TypedDict, total=False):
    """The settings of a 1-D ladder: base, scaling, rotary_dim (:func:`posenc.rope_context_report`'s)."""

    base: float  #: θ, ``rope_theta``
    scaling: Any  #: a :mod:`posenc.rope.scaling` variant, a registered one, or None
    rotary_dim: int | None  #: channels rotated (None: head_dim)


class RopeFrequencySettings(RopeLadderSettings, total=False):
    """The settings of a rotation's frequencies, as keywords (``**settings: Unpack[RopeFrequencySettings]``).

    One shared declaration for every RoPE signature that takes them; a key
    left out takes :class:`RopeConfig`'s field default, the only place a
    default is written. The Literal types let an editor complete a name and
    mypy catch a typo; at run time :func:`settings_spec` refuses an unknown key.
    """

    sections: Any  #: pairs per position axis, a :class:`~posenc.rope.sections.Sections`, or None
    section_layout: SectionLayout
    ladder: LadderSharing


class RopeSettings(RopeFrequencySettings, total=False):
    """:class:`RopeFrequencySettings` and the pair layout: a whole rotation's keywords (``apply_rope``'s)."""

    layout: RopeLayout


#: the keys each settings form takes (what :func:`settings_spec` checks a call's keywords against)
LADDER_SETTINGS = frozenset(RopeLadderSettings.__optional_keys__)
FREQUENCY_SETTINGS = frozenset(RopeFrequencySettings.__optional_keys__)
ROPE_SETTINGS = frozenset(RopeSettings.__optional_keys__)


def _as_left_out(value: Any, plain: str) -> Any:
    """None (left out) for a field at its default value, else the value (a Sections beside it refuses it)."""
    return None if value is None or (isinstance(value, str) and value == plain) else value


@dataclass(frozen=True)
class RopeConfig:
    """A RoPE: its frequencies and its pair layout, validated once when built (the RoPE spec).

    Pass it whole (``apply_rope(x, positions, spec=cfg)``,
    ``rope_cos_sin(positions, cfg)``, ``rope_frequencies(cfg)``) or spread
    (``apply_rope(x, positions, layout=cfg.layout, **cfg.kwargs())``): the same bits.

    Attributes:
        head_dim: channels per head (``head_dim`` or hidden_size/num_attention_heads).
        rotary_dim: channels rotated, int(head_dim·partial_rotary_factor); None
            (the default) means head_dim.
        base: θ, ``rope_theta``.
        scaling: a :mod:`posenc.rope.scaling` variant, a registered scaling
            (:func:`posenc.register_scaling`), or None.
        max_position: ``max_position_embeddings`` (None if the config has none).
        layout: the pairs the model's modeling code rotates: ``"half"``
            (``rotate_half``, most families) or ``"interleaved"`` (GPT-J and
            CodeGen's ``rotate_every_two``; GLM, Cohere, ERNIE 4.5, Helium;
            the complex form of Llama 4 and DeepSeek-V2; DeepSeek-V3 with
            ``rope_interleave``): see :data:`posenc.hf.families.INTERLEAVED`;
            or ``"head_half"`` (Gemma 4's proportional RoPE: pairs
            (i, i + head_dim/2) for i < rotary_dim/2, the rest passed
            through; :mod:`posenc.rope.scaling.proportional`).
        sections: multi-axis RoPE: pairs per position axis (``mrope_section``;
            ``(head_dim/4, head_dim/4)`` for axial), a
            :class:`~posenc.rope.sections.Sections` (read into the three
            fields), or None.
        section_layout: ``"interleaved"`` when ``mrope_interleaved`` (Qwen3-VL),
            else ``"contiguous"``.
        ladder: ``"per_axis"`` for axial RoPE, else ``"shared"``.

    Raises:
        PosEncError: for any bad field or combination (sections that do not
            cover the rotary pairs, per-axis ladders with a scaling).
    """

    head_dim: int
    rotary_dim: int | None = None  # None: every channel rotates
    base: float = 10000.0  # the paper's θ
    scaling: Any = None  # plain RoPE
    max_position: int | None = None  # unknown: no config said
    layout: RopeLayout = "half"  # HF's rotate_half
    sections: tuple[int, ...] | None = None  # 1-D RoPE
    section_layout: SectionLayout = "contiguous"  # Qwen2-VL's
    ladder: LadderSharing = "shared"  # M-RoPE's one ladder
    #: the checked multi-axis split (None for 1-D): what the compute functions read
    multi_axis: Sections | None = field(default=None, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        h, r = check_dims(self.head_dim, self.rotary_dim)
        b = check_base(self.base)
        check_scaling(self.scaling)
        lay = check_rope_layout(self.layout)
        # a field at its default value is taken as left out, as a Sections object beside it wants
        sec = check_sections(self.sections, _as_left_out(self.section_layout, "contiguous"),
                             _as_left_out(self.ladder, "shared"))
        check_multi_axis(sec, r, self.scaling)
        mp = self.max_position
        if mp is not None:
            mp = check_int(mp, "max_position", minimum=1, maximum=int(MAX_POSITION))
        set_fields(self, head_dim=h, rotary_dim=r, base=b, max_position=mp, layout=lay, multi_axis=sec)
        if sec is not None:
            set_fields(self, sections=sec.sizes, section_layout=sec.layout, ladder=sec.ladder)
        else:  # left out (check_sections refuses them without sections): stored as plain names
            set_fields(self, section_layout="contiguous", ladder="shared")

    def kwargs(self) -> RopeFrequencySettings:
        """Keyword arguments for :func:`posenc.rope.rope_frequencies` and friends (all but layout)."""
        out: RopeFrequencySettings = {"base": self.base, "scaling": self.scaling, "rotary_dim": self.rotary_dim}
        if self.sections is not None:
            out["sections"], out["section_layout"], out["ladder"] = self.sections, self.section_layout, self.ladder
        return out


_SPECS = BoundedCache["RopeConfig"](256)


def rope_spec(head_dim: Any, **given: Any) -> RopeConfig:
    """``RopeConfig(head_dim, **given)``, shared between calls with the same arguments (the keyword forms' path).

    Keyed on each argument's type and value, so ``True`` never stands for
    ``1`` nor ``np.float64`` for ``float``; arguments that cannot be hashed
    (a list of sections, an array) build a fresh spec. Either way the spec
    was checked once, when it was built.
    """
    if isinstance(given.get("sections"), Sections):  # a setting passed beside it is refused, even at its default
        check_sections(given["sections"], given.get("section_layout"), given.get("ladder"))
    try:
        key = (type(head_dim), head_dim, *((k, type(v), v) for k, v in sorted(given.items())))
        hash(key)
    except Exception:  # unhashable (a list, an array) or a hostile __hash__: no sharing
        return RopeConfig(head_dim, **given)
    return _SPECS.get(key, lambda: RopeConfig(head_dim, **given))


#: the settings a spec holds whose default is None (not set): None beside a spec is left out
_NONE_DEFAULTS = frozenset({"scaling", "rotary_dim", "sections"})


def settings_spec(spec: RopeConfig | None, head_dim: Any, settings: Mapping[str, Any],
                  allowed: frozenset[str] = ROPE_SETTINGS) -> RopeConfig:
    """``spec`` (its head_dim must be ``head_dim`` when that is given), or the spec ``settings`` mean.

    ``settings`` holds only the keywords a caller passed (a
    :class:`RopeSettings`): a key outside ``allowed`` is refused by name, so a
    typo is never ignored. Beside a spec every key passed is refused, even at
    its default value (``layout="half"`` beside an interleaved spec), since
    either may have been meant; None for a setting whose default is None
    (scaling, rotary_dim, sections) counts as left out.

    >>> settings_spec(None, 4, {"base": 100.0}) == RopeConfig(4, base=100.0)
    True
    >>> settings_spec(None, 4, {"bse": 100.0})  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    posenc.errors.PosEncError: unknown RoPE setting bse=100.0: the settings are base, ladder, layout, ...
    """
    unknown = [k for k in settings if k not in allowed]
    if unknown:
        shown = ", ".join(f"{k}={show_value(settings[k])}" for k in unknown)
        raise PosEncError(f"unknown RoPE setting {shown}: the settings are {', '.join(sorted(allowed))} "
                          "(or spec=, a posenc.RopeConfig)")
    if spec is None:
        return rope_spec(head_dim, **settings)
    if not isinstance(spec, RopeConfig):
        raise PosEncError(f"spec must be a posenc.RopeConfig (or None), got {show_value(spec)}")
    clash = [k for k, v in settings.items() if not (v is None and k in _NONE_DEFAULTS)]
    if clash:
        shown = ", ".join(f"{k}={show_value(settings[k])}" for k in clash)
        raise PosEncError(f"{shown}: part of the spec, so leave them out beside it "
                          "(or use dataclasses.replace(spec, ...))")
    if head_dim is not None and check_d_model(head_dim, "head_dim") != spec.head_dim:
        raise PosEncError(f"x.shape[-1] (head_dim) is {head_dim}, but the spec's head_dim is {spec.head_dim}")
    return spec


def spec_in(head_dim: Any, settings: Mapping[str, Any], allowed: frozenset[str] = ROPE_SETTINGS) -> RopeConfig:
    """The spec of a call whose first argument is a head_dim or a :class:`RopeConfig` in its place (``settings``
    as :func:`settings_spec`).

    >>> cfg = RopeConfig(64, base=500000.0, layout="interleaved")
    >>> spec_in(cfg, {}) is cfg, spec_in(64, {"base": 500000.0, "layout": "interleaved"}) == cfg
    (True, True)
    """
    if isinstance(head_dim, RopeConfig):
        return settings_spec(head_dim, None, settings, allowed)
    return settings_spec(None, head_dim, settings, allowed)


"""Read a Hugging Face model config into posenc's RoPE settings.

Split from :mod:`posenc.rope.scaling` (the variants) to keep each file one concept:
this one is the mapping from HF's config keys to those variants.

Sources: huggingface/transformers ``src/transformers/modeling_rope_utils.py``
(the ``_compute_*_parameters`` functions, the key lists of the
``_validate_*`` functions) and ``configuration_utils.py``
(``RotaryEmbeddingConfigMixin.standardize_rope_params``), main in 2025/2026;
legacy names from transformers 4.x (``rope_scaling``, ``"type"``) and
Phi-3's ``"su"`` (``Phi3Config._rope_scaling_adjustment``). Multi-axis RoPE
(transformers 5.23): ``mrope_section`` and ``mrope_interleaved`` in the rope
dict (``Qwen2VLRotaryEmbedding``, ``Qwen3VLTextRotaryEmbedding``; legacy
``"type": "mrope"`` is ``"default"``, as ``Qwen2VLTextConfig`` maps it), and
``"axial"`` (``Qwen2VLVisionRotaryEmbedding``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from .._compile import outside_compile
from ..errors import MAX_POSITION, PosEncError, check_base, check_channels, check_int, check_real, show_value
from .frequencies import rope_frequencies
from .scaling import DynamicNTK, Linear, Llama3, LongRoPE, YaRN

__all__ = ["RopeConfig", "from_hf_config"]

_COMMON = {"rope_type", "type", "rope_theta", "partial_rotary_factor", "mrope_section", "mrope_interleaved"}

#: rope_type -> (required keys, optional keys) of the rope dict, as HF validates them.
_KEYS: dict[str, tuple[set[str], set[str]]] = {
    "default": (set(), set()),
    "axial": (set(), set()),
    "linear": ({"factor"}, set()),
    "dynamic": ({"factor"}, {"original_max_position_embeddings"}),
    "yarn": (
        {"factor"},
        {
            "original_max_position_embeddings",
            "attention_factor",
            "beta_fast",
            "beta_slow",
            "mscale",
            "mscale_all_dim",
            "truncate",
        },
    ),
    "longrope": ({"short_factor", "long_factor"}, {"original_max_position_embeddings", "attention_factor", "factor"}),
    "llama3": ({"factor", "low_freq_factor", "high_freq_factor", "original_max_position_embeddings"}, set()),
}

_ALIASES = {"su": "longrope", "mrope": "default"}  # Phi-3's first configs; Qwen2-VL's

# What the modeling code assumes when a config leaves the multi-axis keys out:
# model_type -> (interleaved, default mrope_section). Qwen2VLRotaryEmbedding and its
# Qwen2.5-VL copy split contiguously with [16, 24, 24]; Qwen3VL(Moe)TextRotaryEmbedding
# always interleaves, with [24, 20, 20].
_MROPE_MODELS: dict[str, tuple[bool, tuple[int, ...]]] = {
    **{t: (False, (16, 24, 24)) for t in ("qwen2_vl", "qwen2_vl_text", "qwen2_5_vl", "qwen2_5_vl_text")},
    **{t: (True, (24, 20, 20)) for t in ("qwen3_vl", "qwen3_vl_text", "qwen3_vl_moe", "qwen3_vl_moe_text")},
}
_AXIAL_MODELS = ("qwen2_vl_vision",)  # Qwen2VLVisionConfig.default_rope_type = "axial"


@dataclass(frozen=True)
class RopeConfig:
    """A model's RoPE, as posenc's arguments.

    Attributes:
        head_dim: channels per head (``head_dim`` or hidden_size/num_attention_heads).
        rotary_dim: channels rotated, int(head_dim·partial_rotary_factor).
        base: ``rope_theta``.
        scaling: a :mod:`posenc.rope.scaling` variant, or None.
        max_position: ``max_position_embeddings`` (None if the config has none).
        layout: always ``"half"``: HF's modeling code rotates half-split
            (``rotate_half``); checkpoints converted from Meta's were permuted.
        sections: multi-axis RoPE: pairs per position axis (``mrope_section``;
            ``(head_dim/4, head_dim/4)`` for axial), or None.
        section_layout: ``"interleaved"`` when ``mrope_interleaved`` (Qwen3-VL),
            else ``"contiguous"``.
        ladder: ``"per_axis"`` for axial RoPE, else ``"shared"``.
    """

    head_dim: int
    rotary_dim: int
    base: float
    scaling: Any
    max_position: int | None
    layout: str = "half"
    sections: tuple[int, ...] | None = None
    section_layout: str = "contiguous"
    ladder: str = "shared"

    def kwargs(self) -> dict[str, Any]:
        """Keyword arguments for :func:`posenc.rope.rope_frequencies` and friends."""
        out: dict[str, Any] = {"base": self.base, "scaling": self.scaling, "rotary_dim": self.rotary_dim}
        if self.sections is not None:
            out.update(sections=self.sections, section_layout=self.section_layout, ladder=self.ladder)
        return out


def _as_dict(config: Any) -> Mapping[str, Any]:
    if isinstance(config, Mapping):
        return config
    to_dict = getattr(config, "to_dict", None)
    if callable(to_dict):
        d = to_dict()
        if isinstance(d, Mapping):
            return d
    raise PosEncError(f"config must be a dict (config.json) or have .to_dict(), got {type(config).__name__}")


def _positive_int(cfg: Mapping[str, Any], key: str, where: str) -> int:
    if key not in cfg or cfg[key] is None:
        raise PosEncError(f"{where} is missing {key!r}")
    return check_int(cfg[key], f"{where}[{key!r}]", minimum=1, maximum=int(MAX_POSITION))


def _or(value: Any, default: float) -> Any:
    """HF's ``value or default`` for numbers (0 and None mean the default); anything else goes to validation."""
    if value is None or (isinstance(value, (int, float)) and not isinstance(value, bool) and value == 0):
        return default
    return value


def _keys(keys: Any) -> list[str]:
    """Key names for a message, sorted even when the keys mix types."""
    return sorted(k if isinstance(k, str) else repr(k) for k in keys)


@outside_compile("from_hf_config")
def from_hf_config(config: Any) -> RopeConfig:
    """Read a HF ``config.json`` dict (or a ``PretrainedConfig``) into a :class:`RopeConfig`.

    Reads ``rope_parameters`` (transformers 5) or ``rope_scaling`` (4.x);
    ``rope_type`` or legacy ``type``; ``rope_theta`` (inside the rope dict
    first, then top level, default 10000); ``head_dim`` or
    ``hidden_size``/``num_attention_heads``; ``partial_rotary_factor``;
    ``max_position_embeddings``; ``original_max_position_embeddings`` (top
    level first, as HF's ``standardize_rope_params``, then the rope dict,
    then ``max_position_embeddings``). Other top-level keys are ignored.

    Raises:
        PosEncError: unknown rope types, unknown or missing rope keys, bad
            values, per-layer-type rope dicts; the message names them.

    >>> llama31 = {"hidden_size": 4096, "num_attention_heads": 32, "rope_theta": 500000.0,
    ...            "max_position_embeddings": 131072,
    ...            "rope_scaling": {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
    ...                             "high_freq_factor": 4.0, "original_max_position_embeddings": 8192}}
    >>> from_hf_config(llama31).scaling
    Llama3(factor=8.0, low_freq_factor=1.0, high_freq_factor=4.0, original_max=8192)
    """
    cfg, rope = _rope_dict(_as_dict(config))
    rope_type = _rope_type(cfg, rope)
    theta = rope.get("rope_theta")
    base = check_base(cfg.get("rope_theta", 10000.0) if theta is None else theta, "rope_theta")
    head_dim, source = _head_dim(cfg, rope_type)
    rotary_dim = _rotary_dim(cfg, rope, head_dim, source)
    max_pos = cfg.get("max_position_embeddings")
    max_pos = None if max_pos is None else check_int(max_pos, "max_position_embeddings", minimum=1,
                                                     maximum=int(MAX_POSITION))
    scaling = _scaling(rope_type, rope, _original_max(cfg, rope, rope_type, max_pos), max_pos, rotary_dim)
    sections, interleaved = _multi_axis(rope, cfg.get("model_type"), rope_type, head_dim, rotary_dim)
    if sections is None:
        return RopeConfig(head_dim, rotary_dim, base, scaling, max_pos)
    cfg_out = RopeConfig(head_dim, rotary_dim, base, scaling, max_pos, sections=sections,
                         section_layout="interleaved" if interleaved else "contiguous",
                         ladder="per_axis" if rope_type == "axial" else "shared")
    # the sections must fit the rotary dimension: check now, naming the config keys
    try:
        rope_frequencies(head_dim, **cfg_out.kwargs())
    except PosEncError as exc:
        raise PosEncError(f"mrope_section {list(sections)} does not fit this config: {exc}") from None
    return cfg_out


def _rope_dict(cfg: Mapping[str, Any]) -> tuple[Mapping[str, Any], Mapping[str, Any]]:
    """(the language model's config, its rope dict): ``rope_parameters`` (transformers 5) or ``rope_scaling``."""
    text = cfg.get("text_config")
    if isinstance(text, Mapping) and cfg.get("head_dim") is None and cfg.get("hidden_size") is None:
        cfg = text  # a multimodal model's config (transformers 5 nests the language model's)
    rope = cfg.get("rope_parameters")
    if rope is None:
        rope = cfg.get("rope_scaling")
    if rope is None:
        rope = {}
    if not isinstance(rope, Mapping):
        raise PosEncError(f"rope_parameters/rope_scaling must be a dict, got {show_value(rope)}")
    nested = [k for k, v in rope.items() if isinstance(v, Mapping)]
    if nested:
        raise PosEncError(
            f"per-layer-type rope dicts ({', '.join(map(repr, nested))}) are not supported: "
            "pass one layer type's dict merged into the config"
        )
    return cfg, rope


def _rope_type(cfg: Mapping[str, Any], rope: Mapping[str, Any]) -> str:
    """The rope type (legacy names resolved), once its dict holds every key it needs and no other."""
    fallback = "axial" if cfg.get("model_type") in _AXIAL_MODELS else "default"
    raw_type = rope.get("rope_type", rope.get("type", fallback))
    if not isinstance(raw_type, str):
        raise PosEncError(f"rope_type must be a string such as 'linear' or 'yarn', got {show_value(raw_type)}")
    rope_type = _ALIASES.get(raw_type, raw_type)
    if rope_type not in _KEYS:
        raise PosEncError(
            f"unknown rope_type {raw_type!r}; posenc reads {', '.join(map(repr, _KEYS))} (and legacy 'su')"
        )
    required, optional = _KEYS[rope_type]
    unknown = _keys(set(rope) - required - optional - _COMMON)
    if unknown:
        raise PosEncError(f"unknown key(s) {unknown} in the {rope_type!r} rope dict; allowed: "
                          f"{sorted(required | optional | _COMMON)}")
    missing = sorted(required - set(rope))
    if missing:
        raise PosEncError(f"the {rope_type!r} rope dict is missing {missing}")
    return rope_type


def _head_dim(cfg: Mapping[str, Any], rope_type: str) -> tuple[int, str]:
    """(head_dim, where it came from): ``head_dim``, a vision tower's embed_dim // num_heads, or hidden // heads."""
    if cfg.get("head_dim") is not None:
        return check_channels(cfg["head_dim"], "head_dim"), "head_dim"
    if rope_type == "axial" and cfg.get("embed_dim") is not None:
        # vision towers: embed_dim // num_heads (their hidden_size is the language model's)
        heads = cfg.get("num_heads", cfg.get("num_attention_heads"))
        if heads is None:
            raise PosEncError("an axial (vision) config needs 'num_heads' beside 'embed_dim'")
        embed = check_channels(cfg["embed_dim"], "embed_dim")
        n_heads = check_int(heads, "num_heads", minimum=1)
        return embed // n_heads, f"head_dim (embed_dim // num_heads = {embed} // {n_heads})"
    if cfg.get("hidden_size") is None or cfg.get("num_attention_heads") is None:
        raise PosEncError("config needs 'head_dim' or both 'hidden_size' and 'num_attention_heads'")
    hidden = check_int(cfg["hidden_size"], "hidden_size", minimum=1)
    heads = check_int(cfg["num_attention_heads"], "num_attention_heads", minimum=1)
    head_dim = check_channels(hidden // heads, "head_dim = hidden_size // num_attention_heads")
    return head_dim, f"head_dim (hidden_size // num_attention_heads = {hidden} // {heads})"


def _rotary_dim(cfg: Mapping[str, Any], rope: Mapping[str, Any], head_dim: int, source: str) -> int:
    """int(head_dim · partial_rotary_factor), a positive even integer."""
    prf = rope.get("partial_rotary_factor", cfg.get("partial_rotary_factor"))
    prf = 1.0 if prf is None else check_real(prf, "partial_rotary_factor")
    if not 0 < prf <= 1:
        raise PosEncError(f"partial_rotary_factor must be in (0, 1], got {prf}")
    rotary_dim = int(head_dim * prf)
    if rotary_dim < 2 or rotary_dim % 2:
        raise PosEncError(
            f"rotary dimension int(head_dim * partial_rotary_factor) = int({head_dim} * {prf}) = {rotary_dim} "
            f"must be a positive even integer; {source} is {head_dim}"
        )
    if rotary_dim == head_dim and head_dim % 2:
        raise PosEncError(f"head_dim must be even when fully rotated, got {head_dim}")
    return rotary_dim


def _original_max(
    cfg: Mapping[str, Any], rope: Mapping[str, Any], rope_type: str, max_pos: int | None
) -> Callable[[], int]:
    """The original context, read when a scaling asks for it: top level first (as HF's
    ``standardize_rope_params``), then the rope dict, then ``max_position_embeddings``."""

    def original() -> int:
        for where, src in (("config", cfg), ("rope dict", rope)):
            if src.get("original_max_position_embeddings") is not None:
                return _positive_int(src, "original_max_position_embeddings", where)
        if max_pos is None:
            raise PosEncError(
                f"rope_type {rope_type!r} needs 'original_max_position_embeddings' or 'max_position_embeddings'"
            )
        return max_pos

    return original


def _scaling(
    rope_type: str, rope: Mapping[str, Any], original: Callable[[], int], max_pos: int | None, rotary_dim: int
) -> Any:
    """The scaling variant a rope dict names, None for plain (and axial) RoPE."""
    if rope_type in ("default", "axial"):
        return None
    if rope_type == "linear":
        return Linear(rope["factor"])
    if rope_type == "dynamic":
        # HF uses max_position_embeddings here (original_max_position_embeddings is read by no code path)
        if max_pos is None:
            raise PosEncError("rope_type 'dynamic' needs 'max_position_embeddings' (its original length)")
        return DynamicNTK(rope["factor"], max_pos)
    if rope_type == "llama3":
        return Llama3(rope["factor"], rope["low_freq_factor"], rope["high_freq_factor"], original())
    orig = original()
    factor = rope.get("factor")
    if factor is None and max_pos is not None:  # HF main: an explicit null means max/original
        factor = max_pos / orig
    if rope_type == "yarn":
        return YaRN(
            factor,  # type: ignore[arg-type]  # None reaches YaRN's own check, which names it
            orig,
            beta_fast=_or(rope.get("beta_fast"), 32.0),  # HF: `or 32`, so 0 and None both mean 32
            beta_slow=_or(rope.get("beta_slow"), 1.0),
            mscale=rope.get("mscale"),
            mscale_all_dim=rope.get("mscale_all_dim"),
            attention_factor=rope.get("attention_factor"),
            truncate=rope.get("truncate", True),
        )
    scaling = LongRoPE(rope["short_factor"], rope["long_factor"], orig,
                       attention_factor=rope.get("attention_factor"), factor=factor)
    if len(scaling.short_factor) != rotary_dim // 2:
        raise PosEncError(
            f"longrope short_factor/long_factor must have rotary_dim/2 = {rotary_dim // 2} entries, "
            f"got {len(scaling.short_factor)}"
        )
    return scaling

def _multi_axis(
    rope: Mapping[str, Any], model_type: Any, rope_type: str, head_dim: int, rotary_dim: int
) -> tuple[tuple[int, ...] | None, bool]:
    """(sections, interleaved) from ``mrope_section``/``mrope_interleaved``, the model's defaults, or axial."""
    if rope_type == "axial":
        if head_dim % 4 or rotary_dim != head_dim:
            raise PosEncError(f"axial RoPE needs a fully rotated head_dim divisible by 4, got head_dim={head_dim}")
        return (head_dim // 4, head_dim // 4), False
    interleaved, section = _MROPE_MODELS.get(model_type, (False, None)) if isinstance(model_type, str) \
        else (False, None)
    raw = rope.get("mrope_section")
    if raw is not None:
        if isinstance(raw, (str, bytes)) or not isinstance(raw, (list, tuple)):
            raise PosEncError(f"mrope_section must be a list of pair counts, e.g. [16, 24, 24], got {raw!r}"[:200])
        section = tuple(check_int(v, f"mrope_section[{k}]", minimum=1) for k, v in enumerate(raw))
    flag = rope.get("mrope_interleaved")
    if flag is not None:
        if not isinstance(flag, bool):
            raise PosEncError(f"mrope_interleaved must be true or false, got {flag!r}")
        interleaved = flag
    if section is None and flag:
        raise PosEncError("mrope_interleaved is set but the config has no mrope_section")
    return section, interleaved

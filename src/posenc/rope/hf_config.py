"""Read a Hugging Face model config into posenc's RoPE settings.

Split from :mod:`posenc.rope.scaling` (the variants) to keep each file one concept:
this one is the mapping from HF's config keys to those variants.

Sources: huggingface/transformers ``src/transformers/modeling_rope_utils.py``
(the ``_compute_*_parameters`` functions, the key lists of the
``_validate_*`` functions) and ``configuration_utils.py``
(``RotaryEmbeddingConfigMixin.standardize_rope_params``), main in 2025/2026;
legacy names from transformers 4.x (``rope_scaling``, ``"type"``) and
Phi-3's ``"su"`` (``Phi3Config._rope_scaling_adjustment``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..errors import PosEncError, check_base, check_int, check_real
from .scaling import DynamicNTK, Linear, Llama3, LongRoPE, YaRN

__all__ = ["RopeConfig", "from_hf_config"]

_COMMON = {"rope_type", "type", "rope_theta", "partial_rotary_factor"}

#: rope_type -> (required keys, optional keys) of the rope dict, as HF validates them.
_KEYS: dict[str, tuple[set[str], set[str]]] = {
    "default": (set(), set()),
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

_ALIASES = {"su": "longrope"}  # Phi-3's first configs


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
    """

    head_dim: int
    rotary_dim: int
    base: float
    scaling: Any
    max_position: int | None
    layout: str = "half"

    def kwargs(self) -> dict[str, Any]:
        """Keyword arguments for :func:`posenc.rope.rope_frequencies` and friends."""
        return {"base": self.base, "scaling": self.scaling, "rotary_dim": self.rotary_dim}


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
    return check_int(cfg[key], f"{where}[{key!r}]", minimum=1)


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
    cfg = _as_dict(config)
    rope = cfg.get("rope_parameters")
    if rope is None:
        rope = cfg.get("rope_scaling")
    if rope is None:
        rope = {}
    if not isinstance(rope, Mapping):
        raise PosEncError(f"rope_parameters/rope_scaling must be a dict, got {rope!r}"[:200])
    nested = [k for k, v in rope.items() if isinstance(v, Mapping)]
    if nested:
        raise PosEncError(
            f"per-layer-type rope dicts ({', '.join(map(repr, nested))}) are not supported: "
            "pass one layer type's dict merged into the config"
        )
    raw_type = rope.get("rope_type", rope.get("type", "default"))
    rope_type = _ALIASES.get(raw_type, raw_type)
    if rope_type not in _KEYS:
        raise PosEncError(
            f"unknown rope_type {raw_type!r}; posenc reads {', '.join(map(repr, _KEYS))} (and legacy 'su')"
        )
    required, optional = _KEYS[rope_type]
    unknown = sorted(set(rope) - required - optional - _COMMON)
    if unknown:
        raise PosEncError(f"unknown key(s) {unknown} in the {rope_type!r} rope dict; allowed: "
                          f"{sorted(required | optional | _COMMON)}")
    missing = sorted(required - set(rope))
    if missing:
        raise PosEncError(f"the {rope_type!r} rope dict is missing {missing}")

    theta = rope.get("rope_theta")
    if theta is None:
        theta = cfg.get("rope_theta", 10000.0)
    base = check_base(theta, "rope_theta")

    if cfg.get("head_dim") is not None:
        head_dim = check_int(cfg["head_dim"], "head_dim", minimum=1)
    else:
        if cfg.get("hidden_size") is None or cfg.get("num_attention_heads") is None:
            raise PosEncError("config needs 'head_dim' or both 'hidden_size' and 'num_attention_heads'")
        hidden = check_int(cfg["hidden_size"], "hidden_size", minimum=1)
        heads = check_int(cfg["num_attention_heads"], "num_attention_heads", minimum=1)
        head_dim = hidden // heads
    prf = rope.get("partial_rotary_factor", cfg.get("partial_rotary_factor"))
    prf = 1.0 if prf is None else check_real(prf, "partial_rotary_factor")
    if not 0 < prf <= 1:
        raise PosEncError(f"partial_rotary_factor must be in (0, 1], got {prf}")
    rotary_dim = int(head_dim * prf)
    if rotary_dim < 2 or rotary_dim % 2:
        raise PosEncError(
            f"rotary dimension int(head_dim * partial_rotary_factor) = int({head_dim} * {prf}) = {rotary_dim} "
            "must be a positive even integer"
        )
    if rotary_dim == head_dim and head_dim % 2:
        raise PosEncError(f"head_dim must be even when fully rotated, got {head_dim}")

    max_pos = cfg.get("max_position_embeddings")
    max_pos = None if max_pos is None else check_int(max_pos, "max_position_embeddings", minimum=1)

    def original() -> int:
        for where, src in (("config", cfg), ("rope dict", rope)):
            if src.get("original_max_position_embeddings") is not None:
                return _positive_int(src, "original_max_position_embeddings", where)
        if max_pos is None:
            raise PosEncError(
                f"rope_type {rope_type!r} needs 'original_max_position_embeddings' or 'max_position_embeddings'"
            )
        return max_pos

    scaling: Any
    if rope_type == "default":
        scaling = None
    elif rope_type == "linear":
        scaling = Linear(rope["factor"])
    elif rope_type == "dynamic":
        # HF uses max_position_embeddings here (original_max_position_embeddings is read by no code path)
        if max_pos is None:
            raise PosEncError("rope_type 'dynamic' needs 'max_position_embeddings' (its original length)")
        scaling = DynamicNTK(rope["factor"], max_pos)
    elif rope_type == "yarn":
        orig = original()
        factor = rope["factor"]
        if factor is None and max_pos is not None:  # HF main: an explicit null means max/original
            factor = max_pos / orig
        scaling = YaRN(
            factor,
            orig,
            beta_fast=rope.get("beta_fast") or 32.0,  # HF: `or 32`, so 0 and None both mean 32
            beta_slow=rope.get("beta_slow") or 1.0,
            mscale=rope.get("mscale"),
            mscale_all_dim=rope.get("mscale_all_dim"),
            attention_factor=rope.get("attention_factor"),
            truncate=rope.get("truncate", True),
        )
    elif rope_type == "llama3":
        scaling = Llama3(
            rope["factor"], rope["low_freq_factor"], rope["high_freq_factor"], original()
        )
    else:  # longrope
        orig = original()
        factor = rope.get("factor")
        if factor is None and max_pos is not None:
            factor = max_pos / orig
        scaling = LongRoPE(
            rope["short_factor"],
            rope["long_factor"],
            orig,
            attention_factor=rope.get("attention_factor"),
            factor=factor,
        )
        if len(scaling.short_factor) != rotary_dim // 2:
            raise PosEncError(
                f"longrope short_factor/long_factor must have rotary_dim/2 = {rotary_dim // 2} entries, "
                f"got {len(scaling.short_factor)}"
            )
    return RopeConfig(head_dim, rotary_dim, base, scaling, max_pos)

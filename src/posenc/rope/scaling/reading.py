"""Reading a Hugging Face rope dict: the keys every rope type allows, and the lengths and factors they share.

Each scaling's reader (``read(rope_dict, config_dict)``, beside its class in
this folder) refuses keys it does not know through :func:`check_keys`.
Sources: transformers 5.23 ``modeling_rope_utils.py`` (the key lists of the
``_validate_*`` functions) and ``configuration_utils.py``
(``standardize_rope_params``: a top-level ``original_max_position_embeddings``
wins over the rope dict's).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ...errors import MAX_POSITION, PosEncError, check_int

__all__ = [
    "COMMON_KEYS", "check_keys", "hf_or", "max_positions", "original_length", "read_axial", "read_default",
    "read_factor",
]

#: keys any rope dict may hold beside its type's own (read by from_hf_config itself)
COMMON_KEYS = frozenset({"rope_type", "type", "rope_theta", "partial_rotary_factor", "mrope_section",
                         "mrope_interleaved"})


def _names(keys: Any) -> list[str]:
    return sorted(k if isinstance(k, str) else repr(k) for k in keys)


def check_keys(rope_type: str, rope: Mapping[str, Any], required: set[str], optional: set[str]) -> None:
    """Refuse a rope dict with keys outside ``required | optional | COMMON_KEYS``, or missing a required one."""
    unknown = _names(set(rope) - required - optional - COMMON_KEYS)
    if unknown:
        raise PosEncError(f"unknown key(s) {unknown} in the {rope_type!r} rope dict; allowed: "
                          f"{sorted(required | optional | COMMON_KEYS)}")
    missing = sorted(required - set(rope))
    if missing:
        raise PosEncError(f"the {rope_type!r} rope dict is missing {missing}")


def max_positions(cfg: Mapping[str, Any]) -> int | None:
    """The config's ``max_position_embeddings``, checked (None when absent)."""
    value = cfg.get("max_position_embeddings")
    return None if value is None else check_int(value, "max_position_embeddings", minimum=1,
                                                maximum=int(MAX_POSITION))


def original_length(cfg: Mapping[str, Any], rope: Mapping[str, Any], rope_type: str) -> int:
    """Top level first (as ``standardize_rope_params``), then the rope dict, then max_position_embeddings."""
    for where, src in (("config", cfg), ("rope dict", rope)):
        if src.get("original_max_position_embeddings") is not None:
            return check_int(src["original_max_position_embeddings"], f"{where}['original_max_position_embeddings']",
                             minimum=1, maximum=int(MAX_POSITION))
    max_pos = max_positions(cfg)
    if max_pos is None:
        raise PosEncError(
            f"rope_type {rope_type!r} needs 'original_max_position_embeddings' or 'max_position_embeddings'"
        )
    return max_pos


def read_factor(rope: Mapping[str, Any], cfg: Mapping[str, Any], original: int) -> Any:
    """``factor``; an explicit null means max_position_embeddings / original (HF main)."""
    factor = rope.get("factor")
    max_pos = max_positions(cfg)
    if factor is None and max_pos is not None:
        factor = max_pos / original
    return factor


def hf_or(value: Any, default: float) -> Any:
    """HF's ``value or default`` for numbers (0 and None mean the default); anything else goes to validation."""
    if value is None or (isinstance(value, (int, float)) and not isinstance(value, bool) and value == 0):
        return default
    return value


def read_default(rope: Mapping[str, Any], cfg: Mapping[str, Any]) -> None:
    """The reader of ``"default"``: plain RoPE, no keys of its own."""
    check_keys("default", rope, set(), set())


def read_axial(rope: Mapping[str, Any], cfg: Mapping[str, Any]) -> None:
    """The reader of ``"axial"``: plain RoPE per axis, no keys of its own."""
    check_keys("axial", rope, set(), set())

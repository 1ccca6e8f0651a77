"""The built-in rope types of Hugging Face configs, as factories of :mod:`posenc.rope.registry`.

Each factory reads one rope dict (with the language model's config beside it)
into a :mod:`posenc.rope.scaling` variant and refuses keys it does not know.
Sources: transformers 5.23 ``modeling_rope_utils.py`` (the ``_compute_*_parameters``
functions, the key lists of the ``_validate_*`` functions),
``configuration_utils.py`` (``standardize_rope_params``: a top-level
``original_max_position_embeddings`` wins over the rope dict's), and
``models/phimoe/modeling_phimoe.py`` (``short_mscale``/``long_mscale``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from ..errors import MAX_POSITION, PosEncError, check_int
from ..rope.proportional import proportional_factory
from ..rope.registry import ScalingFactory, check_keys, register_scaling
from ..rope.scaling import DynamicNTK, Linear, Llama3, LongRoPE, YaRN

__all__ = ["register_builtins"]

def _max_pos(cfg: Mapping[str, Any]) -> int | None:
    value = cfg.get("max_position_embeddings")
    return None if value is None else check_int(value, "max_position_embeddings", minimum=1,
                                                maximum=int(MAX_POSITION))


def _original(cfg: Mapping[str, Any], rope: Mapping[str, Any], rope_type: str) -> int:
    """Top level first (as ``standardize_rope_params``), then the rope dict, then max_position_embeddings."""
    for where, src in (("config", cfg), ("rope dict", rope)):
        if src.get("original_max_position_embeddings") is not None:
            return check_int(src["original_max_position_embeddings"], f"{where}['original_max_position_embeddings']",
                             minimum=1, maximum=int(MAX_POSITION))
    max_pos = _max_pos(cfg)
    if max_pos is None:
        raise PosEncError(
            f"rope_type {rope_type!r} needs 'original_max_position_embeddings' or 'max_position_embeddings'"
        )
    return max_pos


def _factor(rope: Mapping[str, Any], cfg: Mapping[str, Any], original: int) -> Any:
    """``factor``; an explicit null means max_position_embeddings / original (HF main)."""
    factor = rope.get("factor")
    max_pos = _max_pos(cfg)
    if factor is None and max_pos is not None:
        factor = max_pos / original
    return factor


def _or(value: Any, default: float) -> Any:
    """HF's ``value or default`` for numbers (0 and None mean the default); anything else goes to validation."""
    if value is None or (isinstance(value, (int, float)) and not isinstance(value, bool) and value == 0):
        return default
    return value


def _default(rope: Mapping[str, Any], cfg: Mapping[str, Any]) -> None:
    check_keys("default", rope, set(), set())


def _axial(rope: Mapping[str, Any], cfg: Mapping[str, Any]) -> None:
    check_keys("axial", rope, set(), set())


def _linear(rope: Mapping[str, Any], cfg: Mapping[str, Any]) -> Linear:
    check_keys("linear", rope, {"factor"}, set())
    return Linear(rope["factor"])


def _dynamic(rope: Mapping[str, Any], cfg: Mapping[str, Any]) -> DynamicNTK:
    check_keys("dynamic", rope, {"factor"}, {"original_max_position_embeddings"})
    # HF uses max_position_embeddings here (original_max_position_embeddings is read by no code path)
    max_pos = _max_pos(cfg)
    if max_pos is None:
        raise PosEncError("rope_type 'dynamic' needs 'max_position_embeddings' (its original length)")
    return DynamicNTK(rope["factor"], max_pos)


def _llama3(rope: Mapping[str, Any], cfg: Mapping[str, Any]) -> Llama3:
    check_keys("llama3", rope, {"factor", "low_freq_factor", "high_freq_factor"},
               {"original_max_position_embeddings"})
    return Llama3(rope["factor"], rope["low_freq_factor"], rope["high_freq_factor"], _original(cfg, rope, "llama3"))


_YARN_KEYS = {"original_max_position_embeddings", "attention_factor", "beta_fast", "beta_slow", "mscale",
              "mscale_all_dim", "truncate"}


def _yarn(rope: Mapping[str, Any], cfg: Mapping[str, Any]) -> YaRN:
    check_keys("yarn", rope, {"factor"}, _YARN_KEYS)
    orig = _original(cfg, rope, "yarn")
    return YaRN(
        _factor(rope, cfg, orig),
        orig,
        beta_fast=_or(rope.get("beta_fast"), 32.0),  # HF: `or 32`, so 0 and None both mean 32
        beta_slow=_or(rope.get("beta_slow"), 1.0),
        mscale=rope.get("mscale"),
        mscale_all_dim=rope.get("mscale_all_dim"),
        attention_factor=rope.get("attention_factor"),
        truncate=rope.get("truncate", True),
    )


def _longrope(rope: Mapping[str, Any], cfg: Mapping[str, Any]) -> LongRoPE:
    # short_mscale/long_mscale: Phi-3.5-MoE (PhimoeRotaryEmbedding multiplies them into cos and sin)
    check_keys("longrope", rope, {"short_factor", "long_factor"},
               {"original_max_position_embeddings", "attention_factor", "factor", "short_mscale", "long_mscale"})
    orig = _original(cfg, rope, "longrope")
    return LongRoPE(rope["short_factor"], rope["long_factor"], orig, attention_factor=rope.get("attention_factor"),
                    factor=_factor(rope, cfg, orig), short_mscale=rope.get("short_mscale"),
                    long_mscale=rope.get("long_mscale"))


_BUILTINS: dict[str, Callable[[Mapping[str, Any], Mapping[str, Any]], Any]] = {
    "default": _default,
    "axial": _axial,
    "linear": _linear,
    "dynamic": _dynamic,
    "yarn": _yarn,
    "longrope": _longrope,
    "llama3": _llama3,
    "proportional": proportional_factory,  # Gemma 4 (posenc.rope.proportional)
}


def register_builtins() -> None:
    """Register the built-in rope types (once, at import; a user's replacement is kept)."""
    from ..rope.registry import scaling_factory

    for name, factory in _BUILTINS.items():
        if scaling_factory(name) is None:
            f: ScalingFactory = factory
            register_scaling(name, f)

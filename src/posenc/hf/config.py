"""Read a Hugging Face model config into posenc's RoPE settings.

Split from :mod:`posenc.rope.scaling` (the variants) to keep each file one concept:
this one is the mapping from HF's config keys to those variants. What each
family means by its keys (legacy names, defaults, layouts, per-layer plans)
is :mod:`posenc.hf.families`; each rope type is a factory of the open
registry :mod:`posenc.rope.registry` (built-ins beside their classes in :mod:`posenc.rope.scaling`).

Sources: transformers 5.23 ``src/transformers/modeling_rope_utils.py``
(the ``_compute_*_parameters`` functions, the key lists of the
``_validate_*`` functions) and ``configuration_utils.py``
(``RotaryEmbeddingConfigMixin.standardize_rope_params``); legacy names from
transformers 4.x (``rope_scaling``, ``"type"``) and Phi-3's ``"su"``
(``Phi3Config._rope_scaling_adjustment``). Multi-axis RoPE: ``mrope_section``
and ``mrope_interleaved`` in the rope dict (``Qwen2VLRotaryEmbedding``,
``Qwen3VLTextRotaryEmbedding``; legacy ``"type": "mrope"`` is ``"default"``,
as ``Qwen2VLTextConfig`` maps it), and ``"axial"``
(``Qwen2VLVisionRotaryEmbedding``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..errors import MAX_POSITION, PosEncError, check_base, check_channels, check_int, check_real, show_value
from ..rope.frequencies import spec_frequencies
from ..rope.registry import is_scaling, registered_rope_types, scaling_factory
from ..rope.scaling.proportional import proportional_rotary_dim
from ..rope.spec import RopeConfig
from .families import Plan, plan

__all__ = ["RopeConfig", "from_hf_config", "rope_layer_plan"]

_ALIASES = {"su": "longrope", "mrope": "default"}  # Phi-3's first configs; Qwen2-VL's

# What the modeling code assumes when a config leaves the multi-axis keys out:
# model_type -> (interleaved, default mrope_section), each the rotary module's
# ``config.rope_parameters.get("mrope_section", <default>)`` in transformers 5.23.
# Contiguous (``freq.split(mrope_section)``, axis i % 3): Qwen2VLRotaryEmbedding and its
# Qwen2.5-VL / Qwen2.5-Omni / PaddleOCR-VL copies with [16, 24, 24]; GlmImageText and
# GlmOcrText with [8, 12, 12]. Interleaved (axis h at pairs 1, 4, …, w at 2, 5, …):
# Qwen3VL(Moe)Text, Qwen3-Omni-MoE's thinker and Cosmos3-Edge with [24, 20, 20];
# Qwen3.5(-MoE) and Qwen4-Exp text with [11, 11, 10]. Without these, a config that
# leaves mrope_section out was read as 1-D RoPE (its rows at 2-D positions agree)
# while the module splits by axis.
_MROPE_MODELS: dict[str, tuple[bool, tuple[int, ...]]] = {
    **{t: (False, (16, 24, 24)) for t in ("qwen2_vl", "qwen2_vl_text", "qwen2_5_vl", "qwen2_5_vl_text",
                                          "qwen2_5_omni_text", "qwen2_5_omni_thinker", "paddleocr_vl",
                                          "paddleocr_vl_text")},
    **{t: (False, (8, 12, 12)) for t in ("glm_image", "glm_image_text", "glm_ocr", "glm_ocr_text")},
    **{t: (True, (24, 20, 20)) for t in ("qwen3_vl", "qwen3_vl_text", "qwen3_vl_moe", "qwen3_vl_moe_text",
                                         "qwen3_omni_moe_text", "qwen3_omni_moe_thinker", "cosmos3_edge",
                                         "cosmos3_edge_text")},
    **{t: (True, (11, 11, 10)) for t in ("qwen3_5", "qwen3_5_text", "qwen3_5_moe", "qwen3_5_moe_text",
                                         "qwen4_exp", "qwen4_exp_text")},
}
_AXIAL_MODELS = ("qwen2_vl_vision",)  # Qwen2VLVisionConfig.default_rope_type = "axial"

# Families whose config names the head width under other keys: the config class's
# ``attribute_map`` (transformers 5.23), which the rotary module reads through
# (``config.hidden_size`` is DbrxConfig's ``d_model``). ``config.to_dict()`` and
# config.json hold the mapped names only. model_type -> {key the module reads: key held}
_KEY_ALIASES: dict[str, dict[str, str]] = {
    "dbrx": {"hidden_size": "d_model", "num_attention_heads": "n_heads", "max_position_embeddings": "max_seq_len"},
    "moonshine": {"num_attention_heads": "decoder_num_attention_heads"},
}



def _as_dict(config: Any) -> Mapping[str, Any]:
    if isinstance(config, Mapping):
        return config
    to_dict = getattr(config, "to_dict", None)
    if callable(to_dict):
        d = to_dict()
        if isinstance(d, Mapping):
            return d
    raise PosEncError(f"config must be a dict (config.json) or have .to_dict(), got {type(config).__name__}")


def _family_keys(cfg: Mapping[str, Any]) -> Mapping[str, Any]:
    """The keys a family's rotary module reads, under the names posenc reads (:data:`_KEY_ALIASES`).

    DBRX: transformers 4.x kept the base in ``attn_config.rope_theta``
    (``DbrxAttentionConfig``; dbrx-instruct's config.json: 500000). 5.x
    standardises a top-level ``rope_parameters`` and its
    ``DbrxRotaryEmbedding`` reads only that, so a 4.x file loaded by 5.x gets
    the default base 10000 beside the file's 500000: posenc reads
    ``attn_config.rope_theta`` when no rope dict gives a base, and refuses
    the two when they differ (which base the checkpoint was trained with is
    not in the config).
    """
    model_type = cfg.get("model_type")
    aliases = _KEY_ALIASES.get(model_type) if isinstance(model_type, str) else None
    if aliases is None:
        return cfg
    out = dict(cfg)
    for key, held in aliases.items():
        if out.get(key) is None and out.get(held) is not None:
            out[key] = out[held]
    if model_type == "dbrx":
        attn = out.get("attn_config")
        legacy = attn.get("rope_theta") if isinstance(attn, Mapping) else None
        if legacy is not None:
            rope = out.get("rope_parameters") or out.get("rope_scaling")
            given = rope.get("rope_theta") if isinstance(rope, Mapping) else None
            given = out.get("rope_theta") if given is None else given
            if given is None:
                out["rope_theta"] = legacy
            elif check_base(given, "rope_theta") != check_base(legacy, "attn_config.rope_theta"):
                raise PosEncError(
                    f"model_type 'dbrx' gives rope_theta {given} (rope_parameters, which transformers 5's "
                    f"DbrxRotaryEmbedding reads) and {legacy} (attn_config.rope_theta, transformers 4.x's key); "
                    "posenc cannot tell which base the checkpoint was trained with: set "
                    "config.rope_parameters['rope_theta'] to it before building the model")
    return out


def from_hf_config(config: Any, layer: int | None = None) -> RopeConfig | None:
    """Read a HF ``config.json`` dict (or a ``PretrainedConfig``) into a :class:`RopeConfig`.

    Reads ``rope_parameters`` (transformers 5; per layer type too) or
    ``rope_scaling`` (4.x); ``rope_type`` or legacy ``type``, each through
    its factory in :mod:`posenc.rope.registry`; ``rope_theta`` (inside the
    rope dict first, then top level, then the family's default);
    ``head_dim`` (or ``qk_rope_head_dim`` for MLA models) or
    ``hidden_size``/``num_attention_heads``; ``partial_rotary_factor`` (or
    ``rotary_dim``); ``max_position_embeddings``;
    ``original_max_position_embeddings`` (top level first, as HF's
    ``standardize_rope_params``); and each family's legacy keys, defaults,
    layout and NoPE layers (:mod:`posenc.hf.families`).

    Args:
        config: a config dict or an object with ``.to_dict()``.
        layer: the layer index whose RoPE is wanted; required when the
            model's layers differ (two bases, NoPE layers).

    Returns:
        The layer's :class:`RopeConfig`, or None for a NoPE layer.

    Raises:
        PosEncError: models without RoPE (naming the model_type), unknown
            rope types or keys, rope-related keys posenc does not understand,
            bad values, and layers that differ when ``layer`` is not given;
            the message names them.

    >>> llama31 = {"hidden_size": 4096, "num_attention_heads": 32, "rope_theta": 500000.0,
    ...            "max_position_embeddings": 131072,
    ...            "rope_scaling": {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
    ...                             "high_freq_factor": 4.0, "original_max_position_embeddings": 8192}}
    >>> from_hf_config(llama31).scaling
    Llama3(factor=8.0, low_freq_factor=1.0, high_freq_factor=4.0, original_max=8192)
    >>> gemma3 = {"model_type": "gemma3_text", "head_dim": 256, "num_hidden_layers": 6,
    ...           "rope_theta": 1e6, "rope_local_base_freq": 1e4}
    >>> [from_hf_config(gemma3, layer=i).base for i in (0, 5)]
    [10000.0, 1000000.0]
    """
    kinds, layers = rope_layer_plan(config)
    if layer is not None:
        if layers is None:
            check_int(layer, "layer", minimum=0)
            return kinds["all"]
        i = check_int(layer, "layer", minimum=0, maximum=len(layers) - 1)
        return kinds[layers[i]]
    used = {layers_kind: kinds[layers_kind] for layers_kind in (layers or ("all",))}
    distinct = set(used.values())
    if len(distinct) > 1:
        shown = ", ".join(f"{k}: {'NoPE' if v is None else f'base {v.base:g}'}" for k, v in used.items())
        raise PosEncError(f"this model's layers differ ({shown}); pass layer=i for layer i's RoPE")
    only = next(iter(distinct))
    if only is None:
        raise PosEncError("no layer of this model uses RoPE (every layer is NoPE)")
    return only




def rope_layer_plan(config: Any) -> tuple[dict[str, RopeConfig | None], tuple[str, ...] | None]:
    """(layer kind -> RopeConfig or None for NoPE, the kind of each layer or None when all are ``"all"``).

    What :func:`from_hf_config` and :func:`posenc.hf.patch` read; each kind once.
    """
    p = plan(_family_keys(_as_dict(config)))
    kinds = {k: (None if rope is None else _one(p, rope, k)) for k, rope in p.kinds.items()}
    return kinds, p.layers


def _one(p: Plan, rope: Mapping[str, Any], kind: str) -> RopeConfig:
    """One layer kind's RoPE from its rope dict (and the kind's per-layer overrides, e.g. Gemma 4's head_dim)."""
    cfg = {**p.cfg, **p.overrides.get(kind, {})}
    rope_type = _rope_type(cfg, rope)
    theta = rope.get("rope_theta")
    base = check_base(cfg.get("rope_theta", 10000.0) if theta is None else theta, "rope_theta")
    head_dim, source = _head_dim(cfg, rope_type)
    layout = p.layout
    if rope_type == "proportional":  # pairs (i, i + head_dim/2) of the first k (posenc.rope.scaling.proportional)
        prf = rope.get("partial_rotary_factor")
        rotary_dim = proportional_rotary_dim(head_dim, 1.0 if prf is None else check_real(prf, "partial_rotary_factor"))
        if rotary_dim < head_dim and layout == "half":
            layout = "head_half"
    else:
        rotary_dim = _rotary_dim(cfg, rope, head_dim, source)
    max_pos = cfg.get("max_position_embeddings")
    max_pos = None if max_pos is None else check_int(max_pos, "max_position_embeddings", minimum=1,
                                                     maximum=int(MAX_POSITION))
    factory = scaling_factory(rope_type)
    if factory is None:  # pragma: no cover - _rope_type checked it
        raise PosEncError(f"unknown rope_type {rope_type!r}")
    scaling = factory(rope, cfg)
    if scaling is not None and not is_scaling(scaling):
        raise PosEncError(f"the factory registered for rope_type {rope_type!r} returned {show_value(scaling)}, "
                          "not a scaling (None or an object with scale() and cache_key())")
    sections, interleaved = _multi_axis(rope, cfg.get("model_type"), rope_type, head_dim, rotary_dim)
    multi: dict[str, Any] = {"layout": layout}  # the family's pair layout (hf_families), checked by the spec
    if sections is not None:
        multi |= {"sections": sections, "section_layout": "interleaved" if interleaved else "contiguous",
                 "ladder": "per_axis" if rope_type == "axial" else "shared"}
    # everything must fit the rotary dimension: the spec checks it, and the message names the config keys
    try:
        out = RopeConfig(head_dim, rotary_dim, base, scaling, max_pos, **multi)
        spec_frequencies(out)  # a scaling's own lengths (LongRoPE's factors) meet the rotary dimension here
    except PosEncError as exc:
        what = f"mrope_section {list(sections)}" if sections is not None else f"the {rope_type!r} rope dict"
        raise PosEncError(f"{what} does not fit this config: {exc}") from None
    return out


def _rope_type(cfg: Mapping[str, Any], rope: Mapping[str, Any]) -> str:
    """The rope type (legacy names resolved), once a factory is registered for it."""
    fallback = "axial" if cfg.get("model_type") in _AXIAL_MODELS else "default"
    raw_type = rope.get("rope_type", rope.get("type", fallback))
    if not isinstance(raw_type, str):
        raise PosEncError(f"rope_type must be a string such as 'linear' or 'yarn', got {show_value(raw_type)}")
    rope_type = _ALIASES.get(raw_type, raw_type)
    if scaling_factory(rope_type) is None:
        raise PosEncError(
            f"unknown rope_type {raw_type!r}; posenc reads {', '.join(map(repr, registered_rope_types()))} "
            "(and legacy 'su'); posenc.register_scaling adds one"
        )
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
        found = sorted(k for k, v in cfg.items() if isinstance(k, str) and v is not None and not isinstance(v, Mapping)
                       and any(w in k.lower() for w in ("head", "hidden", "d_model", "embd", "embed", "_dim")))
        raise PosEncError(f"model_type {cfg.get('model_type')!r}: the config needs 'head_dim' or both 'hidden_size' "
                          f"and 'num_attention_heads' for the head width; it has "
                          f"{', '.join(map(repr, found[:8])) if found else 'none of them'}")
    hidden = check_int(cfg["hidden_size"], "hidden_size", minimum=1)
    heads = check_int(cfg["num_attention_heads"], "num_attention_heads", minimum=1)
    head_dim = check_channels(hidden // heads, "head_dim = hidden_size // num_attention_heads")
    return head_dim, f"head_dim (hidden_size // num_attention_heads = {hidden} // {heads})"


def _rotary_dim(cfg: Mapping[str, Any], rope: Mapping[str, Any], head_dim: int, source: str) -> int:
    """``rotary_dim`` (GPT-J, CodeGen) or int(head_dim · partial_rotary_factor), a positive even integer."""
    if cfg.get("rotary_dim") is not None:
        r = check_channels(cfg["rotary_dim"], "rotary_dim")
        if r > head_dim:
            raise PosEncError(f"rotary_dim must be <= {source} = {head_dim}, got {show_value(cfg['rotary_dim'])}")
        return r
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

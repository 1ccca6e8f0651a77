"""What each transformers model family means by its RoPE keys: layouts, legacy names, defaults, per-layer plans.

:func:`plan` turns a config dict into a :class:`Plan`: the language model's
config with every legacy key renamed and every per-model default filled in
(what the family's ``configuration_*.py`` does before the modeling code reads
it), the rope dict of each layer kind (None for a NoPE kind), and the kind of
each layer. Facts from transformers 5.23, ``src/transformers/models/<family>/``
(``configuration_<family>.py``, ``modeling_<family>.py``); the docs' keys page
(docs/reference/hf-config-keys.md) lists one row per family.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ..errors import PosEncError, check_int, show_value
from ..support.vocabulary import RopeLayout

__all__ = ["INTERLEAVED", "NO_ROPE", "Plan", "plan"]

# rotate_half pairs (2i, 2i+1) (x[..., ::2], x[..., 1::2]), rotate_every_two, the complex form
# (view_as_complex over consecutive pairs), or apply_rotary_pos_emb_interleave: modeling_<family>.py of each
INTERLEAVED = frozenset({
    "blt", "blt_global_transformer", "blt_local_decoder", "blt_local_encoder", "blt_patcher", "codegen", "cohere",
    "cohere2", "cohere2_moe", "deepseek_v2", "ernie4_5", "ernie4_5_moe",
    "ernie4_5_vl_moe", "glm", "glm4", "glm4v", "glm4v_text", "glm_ocr", "glm_ocr_text", "gptj", "helium",
    "llama4", "llama4_text", "moonshine", "moonshine_streaming",
    # apply_rotary_pos_emb_interleave always (DeepSeek-V3's rope_interleave path, with no flag to turn it off)
    "axk2", "bailing_hybrid", "deepseek_v32", "glm_moe_dsa", "longcat_flash", "mistral_large4", "mistral_large4_text",
    "openai_privacy_filter",  # _apply_rotary_emb on x[..., ::2], x[..., 1::2]
    # RoFormerSelfAttention.apply_rotary_position_embeddings: stack([-x[..., 1::2], x[..., ::2]], -1), its
    # [sin | cos] table repeated pairwise; a sinusoidal table, no *RotaryEmbedding, so the sweep does not see it
    "roformer",
})

# families whose attention has no RoPE: model_type -> what it uses instead
NO_ROPE = {
    **{t: "learned absolute positions" for t in (
        "gpt2", "bert", "roberta", "distilbert", "opt", "gpt_neo", "gpt_bigcode", "xlm-roberta", "electra",
        "albert", "bart", "mbart", "whisper", "biogpt", "xglm", "camembert")},
    **{t: "ALiBi (posenc.alibi_slopes; posenc.hf.patch)" for t in ("bloom", "mpt")},
    **{t: "relative position buckets (posenc.t5_bucket)" for t in ("t5", "mt5", "umt5", "longt5")},
}

# families whose rotary module computes something posenc does not read (yet): refused by name, never misread.
# Found by the sweep of every transformers 5.23 config class against its own rotary module
# (tests/rope/test_hf_sweep.py).
_NOT_READ = {
    **{t: "2-D vision RoPE (its own frequency ladder per image axis)" for t in (
        "dots3_note_vision_encoder", "eomt_dinov3", "gemma4_vision", "inkling2_vision", "kimi_k25_vision",
        "lfm3_vl_vision", "minimax_m3_vl_vision", "mlcd", "mlcd_vision_model", "muse_glimmer_vision",
        "muse_spark_vision", "paddleocr_vl_vision", "pixtral", "sam3_vit_model", "step3p5_vision",
        "video_llama_3_vision", "llama4_vision_model")},
    "dots3_note_audio_encoder": "an audio encoder's RoPE (not read)",
    **{t: "a rotary module with its own head width (not head_dim · partial_rotary_factor)" for t in (
        "dots3_note", "dots3_note_text", "embedding_gemma2", "embedding_gemma2_text", "jetmoe", "zamba2",
        "minimax_m3_vl", "minimax_m3_vl_text")},
    **{t: "3-D multimodal RoPE with its own channel split" for t in ("ernie4_5_vl_moe", "ernie4_5_vl_moe_text")},
}

# families whose NoPE layers default to every 4th (no_rope_layer_interval) when no_rope_layers is not given
_NOPE_INTERVAL = ("llama4", "llama4_text", "smollm3", "mistral_large4", "mistral_large4_text")

# per-model defaults of partial_rotary_factor: the config classes' `kwargs.setdefault(...)` / field defaults
_PRF_DEFAULT = {"stablelm": 0.25, "glm": 0.5, "glm4": 0.5, "persimmon": 0.5, "phi": 0.5, "gpt_neox": 0.25,
                "gpt_neox_japanese": 1.0}
# mrope_section defaults of the config classes (Glm4vTextConfig: [8, 12, 12])
_MROPE_DEFAULT = {"glm4v": [8, 12, 12], "glm4v_text": [8, 12, 12], "glm4v_moe": [8, 12, 12],
                  "glm4v_moe_text": [8, 12, 12]}
# default_theta of config classes whose layers have two bases: (full, sliding)
_TWO_THETAS = {"gemma3_text": (1_000_000.0, 10_000.0), "modernbert": (160_000.0, 10_000.0),
               "modernbert-decoder": (160_000.0, 10_000.0)}
# Gemma 4's config classes: full-attention layers get head_dim = global_head_dim (default 512) unless
# per_layer_config is given; with no rope dict, sliding layers are default RoPE at 1e4, full layers
# proportional RoPE (a quarter of the head) at 1e6
_GLOBAL_HEAD = ("gemma4_text", "gemma4_unified_text", "diffusion_gemma_text")
_GEMMA4_ROPE = {"sliding_attention": {"rope_type": "default", "rope_theta": 10_000.0},
                "full_attention": {"rope_type": "proportional", "partial_rotary_factor": 0.25,
                                   "rope_theta": 1_000_000.0}}
# config keys that decide the head width (per_layer_config may set only head_dim of them)
_HEAD_KEYS = ("hidden_size", "num_attention_heads", "partial_rotary_factor", "rotary_dim", "qk_rope_head_dim")
# legacy top-level names -> today's (GPT-NeoX: rotary_pct, rotary_emb_base; Falcon/GPT-J files: n_head, n_embd)
_RENAMES = {"rotary_pct": "partial_rotary_factor", "rotary_emb_base": "rope_theta", "n_head": "num_attention_heads",
            "n_embd": "hidden_size", "n_embed": "hidden_size", "n_layer": "num_hidden_layers"}
# keys that carry RoPE meaning and that posenc reads (here, or in from_hf_config / the scaling factories)
_READ = frozenset({
    "rope_parameters", "rope_scaling", "rope_theta", "partial_rotary_factor", "rotary_dim", "qk_rope_head_dim",
    "qk_nope_head_dim", "rope_interleave", "no_rope_layers", "no_rope_layer_interval", "rope_local_base_freq",
    "global_rope_theta", "local_rope_theta", "alibi", "position_embedding_type", "mrope_section",
})
_ROPE_WORDS = ("rope", "rotary", "alibi", "mscale", "theta", "position_embedding_type")


@dataclass(frozen=True)
class Plan:
    """A config read per layer: ``kinds`` (kind -> rope dict, None for NoPE) and each layer's kind."""

    cfg: Mapping[str, Any]  # the language model's config, legacy keys renamed, defaults filled in
    kinds: Mapping[str, Mapping[str, Any] | None]
    layers: tuple[str, ...] | None  # None: every layer is kind "all"
    layout: RopeLayout
    overrides: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)  # kind -> its layers' config keys


def _text(cfg: Mapping[str, Any]) -> Mapping[str, Any]:
    text = cfg.get("text_config")
    if isinstance(text, Mapping) and cfg.get("head_dim") is None and cfg.get("hidden_size") is None:
        return text  # a multimodal model's config (transformers 5 nests the language model's)
    return cfg


def _renamed(cfg: Mapping[str, Any]) -> dict[str, Any]:
    out = dict(cfg)
    for old, new in _RENAMES.items():
        if old in out:
            value = out.pop(old)
            if out.get(new) is None:
                out[new] = value
    return out


def _refuse(cfg: Mapping[str, Any], model_type: Any) -> None:
    if model_type in _NOT_READ:
        raise PosEncError(f"model_type {model_type!r} is not read by posenc: {_NOT_READ[model_type]}")
    if model_type in NO_ROPE:
        raise PosEncError(f"model_type {model_type!r} has no RoPE: it uses {NO_ROPE[model_type]}")
    if cfg.get("alibi") is True:
        raise PosEncError(f"model_type {model_type!r} with alibi: true uses ALiBi, not RoPE "
                          "(posenc.alibi_slopes; posenc.hf.patch)")
    pet = cfg.get("position_embedding_type")
    if pet is not None and pet not in ("rotary", "rope"):
        raise PosEncError(f"position_embedding_type {pet!r} (model_type {model_type!r}) is not RoPE")
    unknown = sorted(k for k, v in cfg.items() if isinstance(k, str) and k not in _READ and v is not None
                     and v is not False and any(w in k.lower() for w in _ROPE_WORDS))
    if unknown:
        raise PosEncError(f"rope-related key(s) {unknown} (model_type {model_type!r}) are not understood by posenc")


def _rope_dict(cfg: Mapping[str, Any]) -> Mapping[str, Any]:
    rope = cfg.get("rope_parameters")
    if rope is None:
        rope = cfg.get("rope_scaling")
    if rope is None:
        rope = {}
    if not isinstance(rope, Mapping):
        raise PosEncError(f"rope_parameters/rope_scaling must be a dict, got {show_value(rope)}")
    return rope


def _merged(rope: Mapping[str, Any], cfg: Mapping[str, Any], theta: Any = None) -> dict[str, Any]:
    """A rope dict with the top-level rope_theta / partial_rotary_factor (``standardize_rope_params``)."""
    out = dict(rope)
    if out.get("rope_theta") is None:
        top = cfg.get("rope_theta")
        out["rope_theta"] = theta if top is None or theta is not None else top
        if out["rope_theta"] is None:
            del out["rope_theta"]
    if out.get("partial_rotary_factor") is None and cfg.get("partial_rotary_factor") is not None:
        out["partial_rotary_factor"] = cfg["partial_rotary_factor"]
    return out


def _layer_types(cfg: Mapping[str, Any], model_type: Any, kinds: Mapping[str, Any]) -> tuple[str, ...]:
    raw = cfg.get("layer_types")
    if raw is None:
        n = cfg.get("num_hidden_layers")
        if model_type in ("gemma3_text", "cohere2", "cohere2_moe") and n is not None:
            # Gemma3TextConfig / Cohere2Config: sliding unless (i + 1) % sliding_window_pattern == 0
            every = check_int(cfg.get("sliding_window_pattern", 6 if model_type == "gemma3_text" else 4),
                              "sliding_window_pattern", minimum=1)
            raw = ["sliding_attention" if (i + 1) % every else "full_attention" for i in range(check_int(n, "n"))]
        elif model_type in ("modernbert", "modernbert-decoder") and n is not None:
            every = check_int(cfg.get("global_attn_every_n_layers", 3), "global_attn_every_n_layers", minimum=1)
            raw = ["sliding_attention" if i % every else "full_attention" for i in range(check_int(n, "n"))]
        else:
            raise PosEncError(f"per-layer-type rope dicts ({', '.join(map(repr, kinds))}) need 'layer_types' "
                              "(one layer type per layer) in the config")
    if isinstance(raw, (str, bytes)) or not isinstance(raw, (list, tuple)):
        raise PosEncError(f"layer_types must be a list of layer type names, got {show_value(raw)}")
    missing = sorted({t for t in raw if t not in kinds}, key=str)
    if missing:
        raise PosEncError(f"layer_types names {missing}, which the per-layer-type rope dicts "
                          f"({', '.join(map(repr, kinds))}) do not define")
    return tuple(raw)


def _gemma4_layer_types(cfg: Mapping[str, Any]) -> Any:
    """Gemma4TextConfig.__post_init__: every 6th layer full by default, and the last layer always full."""
    raw = cfg.get("layer_types")
    if raw is None and cfg.get("num_hidden_layers") is not None:
        n = check_int(cfg["num_hidden_layers"], "num_hidden_layers", minimum=1)
        raw = ["sliding_attention" if (i + 1) % 6 else "full_attention" for i in range(n)]
    if isinstance(raw, (list, tuple)) and raw:
        raw = [*raw[:-1], "full_attention"]
    return raw


def _kinds(cfg: Mapping[str, Any], model_type: Any) -> tuple[dict[str, Any], tuple[str, ...] | None]:
    rope = _rope_dict(cfg)
    nested = [k for k, v in rope.items() if isinstance(v, Mapping)]
    two = _TWO_THETAS.get(model_type)
    if two is not None and not nested:  # a 4.x file of a two-base family: one dict for both kinds
        full = cfg.get("global_rope_theta", cfg.get("rope_theta", two[0]))
        local = cfg.get("local_rope_theta", cfg.get("rope_local_base_freq", two[1]))
        kinds: dict[str, Any] = {"full_attention": _merged(rope, cfg, full),
                                 "sliding_attention": _merged({} if model_type == "gemma3_text" else rope, cfg,
                                                              local)}
        return kinds, _layer_types(cfg, model_type, kinds)
    if not nested and model_type in ("cohere2", "cohere2_moe"):  # one dict; the layer types decide NoPE
        one = _merged(rope, cfg)
        kinds = {"sliding_attention": one, "full_attention": dict(one)}
        return kinds, _layer_types(cfg, model_type, kinds)
    if nested:
        if len(nested) != len(rope):
            flat = sorted(set(rope) - set(nested), key=str)
            raise PosEncError(f"a rope dict mixes per-layer-type dicts ({nested}) and plain keys ({flat})")
        kinds = {k: _merged(v, cfg) for k, v in rope.items()}
        return kinds, _layer_types(cfg, model_type, kinds)
    return {"all": _merged(rope, cfg)}, None


def _no_rope(cfg: Mapping[str, Any], model_type: Any, kinds: dict[str, Any],
             layers: tuple[str, ...] | None) -> tuple[dict[str, Any], tuple[str, ...] | None]:
    """NoPE layers: Llama 4 / SmolLM3 ``no_rope_layers`` (1: RoPE), Cohere2's full-attention layers."""
    if model_type in ("cohere2", "cohere2_moe") and layers is not None:
        # Cohere2Attention applies RoPE only where sliding_window is set (sliding_attention layers)
        kinds = {k: (v if k == "sliding_attention" else None) for k, v in kinds.items()}
        return kinds, layers
    flags = cfg.get("no_rope_layers")
    n = cfg.get("num_hidden_layers")
    # Llama4TextConfig: an empty (or missing) list means "every no_rope_layer_interval-th layer" (default 4),
    # as Llama 4 Scout's config.json leaves it; SmolLM3Config / MistralLarge4Config: a missing one does
    interval_default = model_type in _NOPE_INTERVAL and (not flags if model_type.startswith("llama4")
                                                         else flags is None)
    if (interval_default or (flags is None and "no_rope_layer_interval" in cfg)) and n is not None:
        every = check_int(cfg.get("no_rope_layer_interval", 4), "no_rope_layer_interval", minimum=1)
        flags = [int((i + 1) % every != 0) for i in range(check_int(n, "num_hidden_layers", minimum=0))]
    if not flags:
        return kinds, layers
    if isinstance(flags, (str, bytes)) or not isinstance(flags, (list, tuple)) or \
            any(f not in (0, 1) or isinstance(f, float) for f in flags):
        raise PosEncError(f"no_rope_layers must be a list of 0/1 flags (1: the layer uses RoPE), got "
                          f"{show_value(flags)}")
    base = layers if layers is not None else ("all",) * len(flags)
    if len(base) != len(flags):
        raise PosEncError(f"no_rope_layers has {len(flags)} flags for {len(base)} layers")
    out = dict(kinds)
    out["nope"] = None
    return out, tuple(k if f else "nope" for k, f in zip(base, flags, strict=True))


def _layout(cfg: Mapping[str, Any], model_type: Any) -> RopeLayout:
    flag = cfg.get("rope_interleave")
    if flag is not None:  # DeepSeek-V3 family: apply_rotary_pos_emb_interleave when set (default True)
        if not isinstance(flag, bool):
            raise PosEncError(f"rope_interleave must be true or false, got {show_value(flag)}")
        return "interleaved" if flag else "half"
    if model_type == "deepseek_v3":
        return "interleaved"  # DeepseekV3Config.rope_interleave defaults to True
    return "interleaved" if model_type in INTERLEAVED else "half"


def plan(config: Mapping[str, Any]) -> Plan:
    """The :class:`Plan` of a config dict (see the module doc)."""
    cfg = _renamed(_text(config))
    model_type = cfg.get("model_type")
    _refuse(cfg, model_type)
    if model_type in _PRF_DEFAULT and cfg.get("partial_rotary_factor") is None:
        cfg["partial_rotary_factor"] = _PRF_DEFAULT[model_type]
    if cfg.get("qk_rope_head_dim") is not None:  # MLA: RoPE on the qk_rope_head_dim channels only
        cfg["head_dim"] = cfg["qk_rope_head_dim"]
    if model_type in ("gptj", "codegen"):  # a fixed base; rotary_dim channels of each head
        if cfg.get("rotary_dim") is None:
            raise PosEncError(f"model_type {model_type!r} needs 'rotary_dim' (null rotates embed_dim channels "
                              "of each head, which the modeling code supports only with one head)")
        cfg.setdefault("rope_theta", 10000.0)
    if model_type in _GLOBAL_HEAD:
        if cfg.get("rope_parameters") is None and cfg.get("rope_scaling") is None:
            cfg["rope_parameters"] = {k: dict(v) for k, v in _GEMMA4_ROPE.items()}
        cfg["layer_types"] = _gemma4_layer_types(cfg)
    kinds, layers = _kinds(cfg, model_type)
    if model_type in _MROPE_DEFAULT:
        kinds = {k: (v if v is None or "mrope_section" in v else {**v, "mrope_section": _MROPE_DEFAULT[model_type]})
                 for k, v in kinds.items()}
    kinds, layers = _no_rope(cfg, model_type, kinds, layers)
    return Plan(cfg, kinds, layers, _layout(cfg, model_type), _overrides(cfg, model_type, layers))


def _overrides(cfg: Mapping[str, Any], model_type: Any, layers: tuple[str, ...] | None) -> dict[str, dict[str, Any]]:
    """Per-layer config keys (``per_layer_config``; Gemma 4's ``global_head_dim``), as one set per layer kind.

    transformers' ``HeterogeneousConfigMixin`` gives layers their own keys;
    Gemma4TextConfig (and its Unified / Diffusion copies) fills it, when not
    given, with ``{"head_dim": global_head_dim}`` (default 512) for every
    full-attention layer. Of the keys, only ``head_dim`` touches RoPE; a
    rope-related one, or two values within one layer kind, is refused.
    """
    raw = cfg.get("per_layer_config")
    if raw is None and model_type in _GLOBAL_HEAD and layers is not None:
        head = check_int(cfg.get("global_head_dim", 512), "global_head_dim", minimum=1)
        raw = {i: {"head_dim": head} for i, kind in enumerate(layers) if kind == "full_attention"}
    if not raw:
        return {}
    if not isinstance(raw, Mapping):
        raise PosEncError(f"per_layer_config must be a dict of layer index -> config keys, got {show_value(raw)}")
    if layers is None:
        n = check_int(cfg.get("num_hidden_layers"), "num_hidden_layers (with per_layer_config)", minimum=1)
        layers = ("all",) * n
    found: dict[str, set[Any]] = {}
    for i, kind in enumerate(layers):
        entry = raw.get(i, raw.get(str(i), raw.get(f"{i:02d}", {})))
        if not isinstance(entry, Mapping):
            raise PosEncError(f"per_layer_config[{i}] must be a dict of config keys, got {show_value(entry)}")
        bad = sorted(k for k in entry if isinstance(k, str) and k != "head_dim" and (
            k in _HEAD_KEYS or any(w in k.lower() for w in _ROPE_WORDS)))
        if bad:
            raise PosEncError(f"per_layer_config[{i}] sets {bad}, which posenc does not read per layer")
        found.setdefault(kind, set()).add(entry.get("head_dim"))
    out = {}
    for kind, heads in found.items():
        if len(heads) > 1:
            shown = sorted(map(str, heads))
            raise PosEncError(f"per_layer_config gives the {kind!r} layers different head_dim ({shown}); "
                              "posenc reads one RoPE per layer kind")
        head = heads.pop()
        if head is not None:
            out[kind] = {"head_dim": head}
    return out

"""The transformers version matrix: what each tested release does with each family's tiny model (tests/hf/families.py).

``make test`` runs tests/hf under every release of
:data:`posenc.hf.versions.TESTED` (``requirements-hf/``; 5.23.0 is the
main environment's). Each family is patched in each release, unless this
table says otherwise, as a stated fact:

- :data:`ABSENT`: the release cannot build the family's model (its classes,
  or the config keys the checkpoint needs, are not in it);
- :data:`REFUSED`: posenc refuses it, naming the family and the release, for
  the reason given (a regular expression of the refusal);
- :data:`LACKS`: the transformers classes, named by the tests outside the
  families, that the release does not have (:func:`have` skips there only);
- :data:`INAPPLICABLE`: a test's subject the release does not hold;
- :data:`DIFFERS`: what the release does instead of what the newest do, for
  the reason given (the tests assert it: :func:`behaviour`).

tests/hf/test_hf_matrix.py checks both ways for every family: an absent one
does fail to build and every other builds; a refused one is refused by name
and every other is patched; a class :data:`LACKS` lists is missing from the
release, and every other class the tests name is in it. The tests of each family skip exactly where the
table says so (:func:`require`), with the stated reason. The how-to's
version table (docs/how-to/hf-patch.md) is this table.
"""

from __future__ import annotations

import pytest

transformers = pytest.importorskip("transformers")

#: the installed transformers release
VERSION = transformers.__version__

_NOT_IN_445 = ("llama4", "Llama 4"), ("qwen3", "Qwen3"), ("gemma3", "Gemma 3"), ("deepseek-v3", "DeepSeek-V3"), \
    ("glm4", "GLM-4"), ("olmo2", "OLMo 2"), ("smollm3", "SmolLM3"), ("cohere2", "Cohere2"), ("gemma4", "Gemma 4")

#: release -> family -> why the release cannot build it
ABSENT: dict[str, dict[str, str]] = {
    "4.45.0": {
        **{name: f"no {title} classes in transformers 4.45.0" for name, title in _NOT_IN_445},
        "phi4-mini": "Phi3Config of 4.45.0 has no partial_rotary_factor (it refuses Phi-4-mini's short factor lists)",
        **{name: f"no {cls} in transformers 4.45.0" for name, cls in (
            ("qwen2-vl", "Qwen2VLTextConfig"), ("qwen2.5-vl", "Qwen2_5_VLTextConfig"),
            ("qwen3-vl", "Qwen3VLTextConfig"), ("glm-4.1v", "Glm4vTextConfig"), ("qwen3-vl-full", "Qwen3VLConfig"))},
        "qwen2-vl-full": "4.45.0's Qwen2VLConfig has no text_config (one flat config)",
    },
    "4.57.6": {"gemma4": "no Gemma 4 classes in transformers 4.57.6"},
    "5.23.0": {},
    "5.24.0": {},
    "5.25.0": {},
}

#: release -> family -> a regular expression of posenc's refusal (after "model_type '…' under transformers <release>")
REFUSED: dict[str, dict[str, str]] = {
    "4.45.0": {
        # 4.45's YaRN takes max_position_embeddings as the original length and warns "Unrecognized keys in
        # `rope_scaling` for 'rope_type'='yarn': {'original_max_position_embeddings'}" (4.51.0 reads the key):
        # its rows are not the checkpoint's YaRN
        "qwen2-yarn": r"Qwen2RotaryEmbedding \(all layers\) computes rows posenc does not reproduce",
        # 4.45's Phi-3 picks LongRoPE's factors by the seq_len its attention passes (the cache length)
        "phi3.5-longrope": r"called with seq_len, which decides its length-dependent scaling \(\['LongRoPE'\]\)",
    },
    "4.57.6": {},
    "5.23.0": {},
    "5.24.0": {},
    "5.25.0": {},
}


#: release -> a test's subject -> why the release does not hold what that test compares against
INAPPLICABLE: dict[str, dict[str, str]] = {
    "4.45.0": {"stablelm-rotary-from-config": "4.45.0's StableLmRotaryEmbedding is built from (dim, "
                                              "max_position_embeddings, base), not from a config"},
    "4.57.6": {"glm-4.1v-module-sections": "4.57.6's Glm4vTextRotaryEmbedding holds no mrope_section: it returns "
                                           "each axis's rows and its attention splits the sections"},
}


def _lacking(release: str, groups: dict[str, tuple[str, ...]]) -> dict[str, str]:
    return {cls: f"transformers {release} has no {cls} ({what})" for what, classes in groups.items()
            for cls in classes}


_NEWER_THAN_457 = {
    "Laguna": ("LagunaConfig", "LagunaForCausalLM"), "Mellum": ("MellumConfig", "MellumForCausalLM"),
    "Step3p7": ("Step3p7TextConfig", "Step3p7TextModel"), "GLM-Image": ("GlmImageTextConfig", "GlmImageTextModel"),
    "GLM-OCR": ("GlmOcrTextConfig", "GlmOcrTextModel"), "PaddleOCR-VL": ("PaddleOCRTextConfig", "PaddleOCRTextModel"),
    "Qwen3.5": ("Qwen3_5TextConfig", "Qwen3_5TextModel"), "HunYuan-VL": ("HunYuanVLTextConfig", "HunYuanVLTextModel"),
    "Gemma 4": ("Gemma4TextConfig", "Gemma4ForCausalLM"),
    "Qwen2.5-Omni's text config came later": ("Qwen2_5OmniTextConfig",),
}

#: release -> transformers class -> why the release lacks it (classes the tests build by name; the families'
#: classes too, beside :data:`ABSENT`)
LACKS: dict[str, dict[str, str]] = {
    "4.45.0": _lacking("4.45.0", {
        **{k: v for k, v in _NEWER_THAN_457.items() if not k.startswith("Qwen2.5-Omni")},
        "Qwen2.5-Omni": ("Qwen2_5OmniTextConfig", "Qwen2_5OmniThinkerTextModel"),
        "Moonshine": ("MoonshineConfig", "MoonshineForConditionalGeneration"),
        "Llama 4": ("Llama4TextConfig", "Llama4ForCausalLM"), "Qwen3": ("Qwen3Config", "Qwen3ForCausalLM"),
        "Gemma 3": ("Gemma3TextConfig", "Gemma3ForCausalLM"), "DeepSeek-V3": ("DeepseekV3Config",
                                                                              "DeepseekV3ForCausalLM"),
        "GLM-4": ("Glm4Config", "Glm4ForCausalLM"), "OLMo 2": ("Olmo2Config", "Olmo2ForCausalLM"),
        "SmolLM3": ("SmolLM3Config", "SmolLM3ForCausalLM"), "Cohere2": ("Cohere2Config", "Cohere2ForCausalLM"),
        "4.45's Qwen2-VL has one flat config": ("Qwen2VLTextConfig", "Qwen2VLTextModel"),
        "no Qwen2.5-VL text classes": ("Qwen2_5_VLTextConfig", "Qwen2_5_VLTextModel"),
        "Qwen3-VL": ("Qwen3VLConfig", "Qwen3VLTextConfig", "Qwen3VLTextModel"),
        "GLM-4.1V": ("Glm4vTextConfig", "Glm4vTextModel"),
    }),
    "4.57.6": _lacking("4.57.6", _NEWER_THAN_457),
    "5.23.0": {},
    "5.24.0": {},
    "5.25.0": {},
}


def have(*classes: str) -> None:
    """Skip the calling test where :data:`LACKS` says the installed release has none of one of ``classes``."""
    for cls in classes:
        why = LACKS.get(VERSION, {}).get(cls)
        if why is not None:
            pytest.skip(why)


#: release -> a test's subject -> (why, what the release does: a pattern or a value the test asserts)
DIFFERS: dict[str, dict[str, tuple[str, object]]] = {
    **{v: {
        "pixtral-refusal": (
            f"{v}'s PixtralRotaryEmbedding has no 'Vision' in its name, so posenc takes it for a language model's "
            "and refuses the config, which names pixtral's 2-D vision RoPE",
            r"model_type 'pixtral' is not read by posenc: 2-D vision RoPE"),
        "dbrx-config-dict": (f"{v}'s DbrxConfig writes no rope_parameters: the base stays in attn_config alone",
                             "read"),
    } for v in ("4.45.0", "4.57.6")},
    "5.23.0": {},
    "5.24.0": {},
    "5.25.0": {},
}
DIFFERS["4.57.6"]["gemma3-cast"] = (
    "4.57.6's Gemma 3 keeps a second module (rotary_emb_local) built from an edited copy of the config: a cast "
    "one cannot be rebuilt from the model's config to check it",
    r"serves one of the several RoPEs its config defines without taking a layer type")
DIFFERS["4.57.6"]["qwen2-vl-module-sections"] = (
    "4.57.6's Qwen2VLRotaryEmbedding returns each axis's rows and never reads an mrope_section of its own: one set "
    "on it changes nothing, and the model is patched", "patched")


def behaviour(subject: str, default: object) -> object:
    """What the installed release does for ``subject``: :data:`DIFFERS`'s value, else ``default`` (the newest's)."""
    stated = DIFFERS.get(VERSION, {}).get(subject)
    return default if stated is None else stated[1]


def applies(subject: str) -> None:
    """Skip the calling test where :data:`INAPPLICABLE` says the release lacks what it compares against."""
    why = INAPPLICABLE.get(VERSION, {}).get(subject)
    if why is not None:
        pytest.skip(f"transformers {VERSION}: {why}")


def known() -> bool:
    """Whether the installed release is one the matrix states facts for."""
    return VERSION in ABSENT and VERSION in REFUSED


def absent(name: str) -> str | None:
    """Why the installed release cannot build family ``name`` (None: it can)."""
    return ABSENT.get(VERSION, {}).get(name)


def refused(name: str) -> str | None:
    """The pattern of posenc's refusal of family ``name`` under the installed release (None: it is patched)."""
    return REFUSED.get(VERSION, {}).get(name)


def require(name: str) -> None:
    """Skip the calling test where the table says family ``name`` is absent from or refused under this release."""
    why = absent(name)
    if why is not None:
        pytest.skip(f"transformers {VERSION}: {why}")
    pattern = refused(name)
    if pattern is not None:
        pytest.skip(f"transformers {VERSION}: posenc refuses {name} by name ({pattern})")

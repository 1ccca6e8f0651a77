"""posenc's exact RoPE in a Hugging Face transformers model, in one line (extra ``posenc[hf]``).

``posenc.hf.patch(AutoModelForCausalLM.from_pretrained(name))``; here on a
tiny model built from its config (no download):

>>> import posenc.hf
>>> from transformers import LlamaConfig, LlamaForCausalLM
>>> config = LlamaConfig(hidden_size=16, intermediate_size=32, num_hidden_layers=1, num_attention_heads=2,
...                      num_key_value_heads=1, vocab_size=32)
>>> model = posenc.hf.patch(LlamaForCausalLM(config))
>>> type(model.model.rotary_emb).__name__
'PatchedRotary'
>>> type(posenc.hf.unpatch(model).model.rotary_emb).__name__
'LlamaRotaryEmbedding'

:func:`patch` finds every rotary embedding of the model (the ``*RotaryEmbedding``
modules, and GPT-J / CodeGen's ``embed_positions`` tables), reads the RoPE of
each from its config (:func:`posenc.from_hf_config`, per layer type where the
layers differ), checks at small positions that posenc's rows reproduce the
module's output (the form its modeling code reads: see
:mod:`posenc.torch.hf_rotary`), and swaps it for a module that returns
posenc's exact rows. :func:`unpatch` puts the originals back. Multi-axis
RoPE (Qwen2-VL, Qwen2.5-VL, Qwen3-VL, GLM-4V: ``position_ids`` ``[3, b, s]``)
gets each axis's rows, each pair from its section's axis
(:func:`posenc.torch.hf_rotary.multi_axis_rows`); Gemma 4's proportional
layers get rows widened with angle 0 (:func:`posenc.torch.hf_rotary.padded`).
A vision tower's 2-D RoPE is left as it is.

What keeps working: ``generate`` with the KV cache, left padding
(``position_ids`` from the attention mask are read as given), ``torch.compile``
at any position, ``fullgraph=True`` included, with eager's rows (one custom
operator: :mod:`posenc.torch.hf_rotary`), ``model.to(dtype)`` (rows stay
exact; float64 models get float64 rows; a model already cast to bfloat16,
or built on the meta device, is read from its config),
``save_pretrained``/``state_dict`` (no new keys: the rows are not saved), and
dynamic NTK's length-dependent base as transformers defines it (kept after a
long call; see :mod:`posenc.torch.hf_rotary`).

ALiBi models (BLOOM, MPT, Falcon with ``alibi=True``) get posenc's correctly
rounded slopes (:func:`posenc.alibi_slopes`) in place of the float32 ``pow``
of their modeling code (:mod:`posenc.torch.hf_alibi`). A model with neither
(GPT-2, BERT) is refused with its ``model_type``. T5's relative buckets need
nothing: transformers' ``_relative_position_bucket`` already gives
:func:`posenc.t5_bucket`'s buckets.
"""

from __future__ import annotations

import inspect
from typing import Any

from .errors import PosEncError

__all__ = ["patch", "unpatch"]

_PROBE = 8  # positions 0 … 7: where the stock module is exact to float32, the form is found


def _torch() -> Any:
    try:
        import torch
    except ImportError as exc:  # pragma: no cover - exercised without torch
        raise ImportError("posenc.hf needs PyTorch and transformers: pip install 'posenc[hf]'") from exc
    return torch


def _model_type(model: Any, fn: str = "patch") -> str:
    """The model's ``model_type``, once ``model`` is a transformers model instance (else a PosEncError naming it)."""
    torch = _torch()
    if isinstance(model, type):
        raise PosEncError(f"{fn} needs a transformers model instance, got the class {model.__name__} "
                          f"(build it first: {model.__name__}(config) or {model.__name__}.from_pretrained(name))")
    config = getattr(model, "config", None)
    if not isinstance(model, torch.nn.Module) or config is None or not hasattr(config, "to_dict"):
        got = "None" if model is None else f"the string {model[:40]!r}" if isinstance(model, str) \
            else type(model).__name__
        hint = " (a config: build the model from it first)" if hasattr(model, "to_dict") and hasattr(
            model, "model_type") else ""
        raise PosEncError(f"{fn} needs a transformers model (a torch.nn.Module with .config), got {got}{hint}")
    return str(getattr(config, "model_type", "?"))


def _rotary_modules(model: Any) -> list[tuple[Any, str, Any]]:
    """(parent, attribute, module) of every stock rotary embedding (holding ``inv_freq`` buffers)."""
    out = []
    for parent in model.modules():
        for name, child in parent.named_children():
            # a vision tower's 2-D RoPE (Qwen2-VL's VisionRotaryEmbedding …) is left as it is: not read
            if type(child).__name__.endswith("RotaryEmbedding") and "Vision" not in type(child).__name__ and any(
                    b.endswith("inv_freq") for b, _ in child.named_buffers(recurse=False)):
                out.append((parent, name, child))
    return out


def _ropes(module: Any, model: Any) -> dict[str | None, Any]:
    """layer type (None: the module takes none) -> RopeConfig, for what this module serves.

    Only the layer types the layers use: Mellum's and Laguna's rope dicts
    define ``sliding_attention`` beside ``full_attention``, but with every layer
    full their rotary module holds ``full_attention`` alone. A module whose
    ``layer_type`` has no default (Step3p7's) is called with it even when one
    type serves every layer.
    """
    from .rope.hf_config import rope_layer_plan

    config = getattr(module, "config", None) or model.config.get_text_config()
    kinds, layers = rope_layer_plan(config)
    used: dict[str | None, Any] = {k: r for k, r in kinds.items()
                                   if r is not None and (layers is None or k in layers)}
    name = type(module).__name__
    if not used:
        raise PosEncError(f"{name}: no layer of this model uses RoPE (every layer is NoPE); nothing to patch")
    param = inspect.signature(module.forward).parameters.get("layer_type")
    required = param is not None and param.default is inspect.Parameter.empty
    if param is not None and (len(used) > 1 or required):
        if layers is None or any(k in ("all", "nope") for k in used):
            raise PosEncError(f"{name} takes a layer_type, but the config names no layer types (layer_types) "
                              "for posenc to call it with; not patched")
        return dict(used)
    distinct = set(used.values())
    if len(distinct) != 1:
        raise PosEncError(f"{name} serves layers with different RoPE ({sorted(map(str, used))}) "
                          "but takes no layer_type; posenc cannot tell them apart")
    return {None: next(iter(distinct))}


def _check_sections(module: Any, ropes: dict[str | None, Any]) -> None:
    """The module's own ``mrope_section`` (M-RoPE modules hold it) against the sections posenc read."""
    held = getattr(module, "mrope_section", None)
    if not isinstance(held, (list, tuple)) or not all(isinstance(v, int) for v in held):
        return
    for kind, rope in ropes.items():
        if rope.sections != tuple(held):
            read = "none (1-D RoPE)" if rope.sections is None else list(rope.sections)
            raise PosEncError(
                f"{type(module).__name__} ({'all layers' if kind is None else kind}) splits its rows by "
                f"mrope_section {list(held)}, but posenc read {read} from the config: posenc does not know "
                "this family's multi-axis RoPE; not patched")


def _probe_target(module: Any, model: Any) -> Any:
    """The module to check posenc's rows against: itself, or a float32 rebuild from its config.

    A model on the meta device holds no values to check; ``model.to(torch.bfloat16)``
    casts ``inv_freq`` to bfloat16 (``from_pretrained(dtype=torch.bfloat16)`` keeps it
    float32). Both are read from the config, as the module was built: the module
    is built again on the CPU from its config, in float32, and for a cast module
    its buffers must be that rebuild's rounded to their dtype (the config's RoPE,
    rounded), else the model is refused naming the buffer.
    """
    torch = _torch()
    floats = [(n, b) for n, b in module.named_buffers() if b.is_floating_point()]
    meta = any(b.is_meta for _, b in floats)
    low = [(n, b) for n, b in floats if not b.is_meta and b.dtype not in (torch.float32, torch.float64)]
    if not meta and not low:
        return module
    name = type(module).__name__
    why = "is on the meta device (no values to check posenc's rows against)" if meta else (
        f"holds {low[0][0]} in {str(low[0][1].dtype).removeprefix('torch.')} (model.to(dtype) cast it)")
    config = getattr(module, "config", None) or model.config.get_text_config()
    try:
        with torch.device("cpu"):
            fresh = type(module)(config)
    except Exception as exc:
        raise PosEncError(f"{name} {why}, and posenc cannot rebuild it from its config to check it "
                          f"({type(exc).__name__}); patch the model before casting or once it is loaded: "
                          "posenc.hf.patch(model).to(dtype)") from None
    held = dict(fresh.named_buffers())
    for buffer, value in low:
        want = held.get(buffer)
        if want is None or want.shape != value.shape or not torch.equal(want.to(value.dtype), value.cpu()):
            raise PosEncError(f"{name} {why}, but its {buffer} is not its config's frequencies rounded to "
                              f"{str(value.dtype).removeprefix('torch.')}: it was changed after the model was "
                              "built; not patched")
    return fresh


def _form(module: Any, ropes: dict[str | None, Any]) -> str:
    torch = _torch()
    from .torch.hf_rotary import multi_axis_rows, output_form, padded, rotary_for

    _check_sections(module, ropes)
    forms = set()
    for kind, rope in ropes.items():
        which = "all layers" if kind is None else kind
        positions = torch.arange(_PROBE).reshape(1, _PROBE)
        if rope.sections is not None:  # M-RoPE: axes that differ, so that each pair's axis is checked
            positions = torch.stack([positions * (a + 1) % _PROBE for a in range(len(rope.sections))])
        x = torch.zeros(1, _PROBE, 1, dtype=torch.float32)
        try:
            with torch.no_grad():
                stock = module(x, positions) if kind is None else module(x, positions, layer_type=kind)
        except Exception as exc:  # the stock module itself fails on this config (a mismatched default …)
            detail = str(exc).strip().splitlines()[0][:200] if str(exc).strip() else ""
            raise PosEncError(f"{type(module).__name__} ({which}) fails on its own config at positions 0 … "
                              f"{_PROBE - 1} ({type(exc).__name__}: {detail}); posenc read {rope}; "
                              "not patched") from None
        flat = positions.reshape(-1, _PROBE)
        rows = rotary_for(rope).cache.lookup(_PROBE, positions=flat, batch=int(flat.shape[0]))
        if rope.sections is not None:
            rows = multi_axis_rows(rows, rope)
        form = output_form(stock, *padded(rows[..., 0, :], rows[..., 1, :], rope))
        if form is None:
            raise PosEncError(f"{type(module).__name__} ({which}) computes rows "
                              f"posenc does not reproduce from its config (read as {rope}); not patched")
        forms.add(form)
    if len(forms) != 1:  # pragma: no cover - one module, one code path
        raise PosEncError(f"{type(module).__name__} returns different forms per layer type: {sorted(forms)}")
    return forms.pop()


def _patch_sincos(model: Any) -> int:
    """GPT-J / CodeGen attentions: their ``_get_embed_positions`` answered with posenc's table."""
    from .rope.hf_config import from_hf_config
    from .torch.hf_rotary import PatchedSinCos

    count = 0
    for module in model.modules():
        if hasattr(module, "embed_positions") and hasattr(module, "_get_embed_positions"):
            rope = from_hf_config(model.config)
            held = int(module.embed_positions.shape[0])
            module._get_embed_positions = PatchedSinCos(rope, held)  # an instance attribute shadows the method
            count += 1
    return count


def patch(model: Any) -> Any:
    """Swap every rotary embedding (or ALiBi table) of a transformers model for posenc's exact rows.

    Args:
        model: a transformers ``PreTrainedModel`` (loaded or built from a config).

    Returns:
        The same model, patched in place (patching twice is a no-op).

    Raises:
        PosEncError: not a transformers model instance (None, a string, a
            config, a class); a model without RoPE or ALiBi (naming its
            model_type and what it has instead: a vision tower's 2-D RoPE, a
            rotary module posenc does not recognise, or what its config
            says), or a rotary module whose rows posenc cannot reproduce from
            its config, or that fails on its own config (naming it); nothing
            is changed then.
    """
    _torch()
    from .torch.hf_alibi import patch_alibi
    from .torch.hf_rotary import PatchedRotary

    model_type = _model_type(model)
    if patch_alibi(model):
        return model
    found = _rotary_modules(model)
    plans = [(parent, name, module, _ropes(module, model)) for parent, name, module in found]
    forms = [_form(_probe_target(module, model), ropes) for _, _, module, ropes in plans]  # all before any change
    for (parent, name, module, ropes), form in zip(plans, forms, strict=True):
        replacement = PatchedRotary(module, ropes, form, getattr(model.config, "max_position_embeddings", None))
        device = next((b.device for b in module.buffers()), None)
        setattr(parent, name, replacement if device is None else replacement.to(device))
    if not found and not any(isinstance(m, PatchedRotary) for m in model.modules()) and not _patch_sincos(model):
        raise PosEncError(_nothing_to_patch(model, model_type))
    return model


def _nothing_to_patch(model: Any, model_type: str) -> str:
    """Why a model is refused: what it has instead of a rotary module posenc reads (the refusal's wording)."""
    from .rope.hf_config import rope_layer_plan

    rotary = sorted({type(m).__name__ for m in model.modules() if type(m).__name__.endswith("RotaryEmbedding")
                     or any(b.endswith("inv_freq") for b, _ in m.named_buffers(recurse=False))})
    vision = [n for n in rotary if "Vision" in n]
    other = [n for n in rotary if "Vision" not in n]
    if other:
        return (f"model_type {model_type!r} has a rotary module posenc does not recognise ({', '.join(other)}); "
                "not patched")
    head = f"model_type {model_type!r} has "
    if vision:
        head += (f"only a vision tower's 2-D RoPE ({', '.join(vision)}), which posenc leaves as it is, and no "
                 "language-model rotary embedding nor ALiBi to patch")
    else:
        head += "no rotary embedding module nor ALiBi for posenc to patch"
    try:
        rope_layer_plan(model.config.get_text_config() if hasattr(model.config, "get_text_config") else model.config)
    except PosEncError as exc:
        return f"{head} (its config: {exc})"
    return f"{head}, though its config reads as RoPE: posenc does not know where this family computes it"


def unpatch(model: Any) -> Any:
    """Undo :func:`patch`: the original rotary modules, methods and ALiBi tables; returns the model.

    Raises:
        PosEncError: ``model`` is not a transformers model instance (None, a
            string, a config, a class), as :func:`patch` refuses them.
    """
    _torch()
    from .torch.hf_alibi import unpatch_alibi
    from .torch.hf_rotary import PatchedRotary, PatchedSinCos

    _model_type(model, "unpatch")
    unpatch_alibi(model)
    for parent in model.modules():
        for name, child in list(parent.named_children()):
            if isinstance(child, PatchedRotary):
                device = next((b.device for b in child.buffers()), None)
                stock = child.stock
                setattr(parent, name, stock if device is None else stock.to(device))
        if isinstance(vars(parent).get("_get_embed_positions"), PatchedSinCos):
            del parent._get_embed_positions
    return model

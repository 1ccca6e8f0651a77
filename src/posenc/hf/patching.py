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
:mod:`posenc.hf.rotary`), and swaps it for a module that returns
posenc's exact rows. :func:`unpatch` puts the originals back. Multi-axis
RoPE (Qwen2-VL, Qwen2.5-VL, Qwen3-VL, GLM-4V: ``position_ids`` ``[3, b, s]``)
gets each axis's rows, each pair from its section's axis
(:func:`posenc.hf.rotary.multi_axis_rows`); Gemma 4's proportional
layers get rows widened with angle 0 (:func:`posenc.hf.rotary.padded`).
A vision tower's 2-D RoPE is left as it is.

What keeps working: ``generate`` with the KV cache, left padding
(``position_ids`` from the attention mask are read as given), ``torch.compile``
at any position, ``fullgraph=True`` included, with eager's rows (one custom
operator: :mod:`posenc.hf.rotary`), ``model.to(dtype)`` (rows stay
exact; float64 models get float64 rows; a model already cast to bfloat16,
or cast to it and back to float64, or built on the meta device, is read from
its config),
``save_pretrained``/``state_dict`` (no new keys: the rows are not saved), and
dynamic NTK's length-dependent base as transformers defines it (kept after a
long call; see :mod:`posenc.hf.rotary`).

ALiBi models (BLOOM, MPT, Falcon with ``alibi=True``) get posenc's correctly
rounded slopes (:func:`posenc.alibi_slopes`) in place of the float32 ``pow``
of their modeling code (:mod:`posenc.hf.alibi`). A model with neither
(GPT-2, BERT) is refused with its ``model_type``. T5's relative buckets need
nothing: transformers' ``_relative_position_bucket`` already gives
:func:`posenc.t5_bucket`'s buckets.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

from ..errors import PosEncError
from .probe import _PROBE, _form, _per_axis, _probe_target, _ropes, _takes, _torch
from .versions import (
    ATTENTION_BUFFER,
    ATTENTION_TABLE,
    ROTARY,
    ROTARY_TABLE,
    SINUSOIDAL,
    check_release,
    expected_holder,
)

__all__ = ["patch", "unpatch"]




@contextlib.contextmanager
def _named(model_type: str, version: str) -> Iterator[None]:
    """A refusal raised while reading or probing a model names its family and the transformers release."""
    try:
        yield
    except PosEncError as exc:
        if str(exc).startswith("model_type"):
            raise
        raise PosEncError(f"model_type {model_type!r} under transformers {version}: {exc}") from None


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


def _transformers_version() -> str:
    import transformers

    return str(transformers.__version__)



def _rotary_modules(model: Any, model_type: str, version: str) -> list[tuple[Any, str, Any]]:
    """(parent, attribute, module) of every stock rotary module: one holding ``inv_freq``, called with positions.

    Found by what the module holds and how it is called, not by its class
    name; a holder :mod:`posenc.hf.versions` does not list for this
    family and transformers release is refused by name (:func:`_check_holders`).
    """
    out: list[tuple[Any, str, Any]] = []
    legacy: list[tuple[Any, str, Any]] = []
    for parent in model.modules():
        for name, child in parent.named_children():
            if not any(b.endswith("inv_freq") for b, _ in child.named_buffers(recurse=False)):
                continue
            if "Vision" in type(child).__name__:  # a vision tower's 2-D RoPE (Qwen2-VL's …) is left as it is
                continue
            (out if "position_ids" in _takes(child) else legacy).append((parent, name, child))
    if legacy:
        module = legacy[0][2]
        raise PosEncError(f"model_type {model_type!r} under transformers {version}: {type(module).__name__} is "
                          f"called as ({', '.join(_takes(module))}), without position_ids; posenc patches rotary "
                          "modules called with the positions (transformers 4.45's Llama form and later); not patched")
    _check_holders(model, model_type, version, ROTARY if out else None)
    return out


def _table_holders(model: Any, expected: str) -> list[tuple[str, Any, str, Any]]:
    """(holder, parent, attribute, module) of every stock RoPE table: GPT-J / CodeGen's and RoFormer's.

    An ``embed_positions`` tensor on a module without ``inv_freq``: the
    attention's own (read through ``_get_embed_positions``, or indexed
    directly where this release is known to do so), or a module called as
    ``(x, position_ids)``; RoFormer's ``nn.Embedding`` called as
    ``(input_ids_shape, cache length)`` where this release is known
    to hold one. Tables posenc already holds are not listed.
    """
    torch = _torch()
    from .rotary import PatchedSinCos

    out = []
    for parent in model.modules():
        for name, child in [("", parent), *parent.named_children()]:
            if name and not (expected == SINUSOIDAL and isinstance(child, torch.nn.Embedding)):
                continue
            takes = _takes(child)
            if name:  # RoFormer's sinusoidal embedding
                if takes[:1] == ("input_ids_shape",) and len(takes) >= 2:  # (shape, where the cache ends[, …])
                    out.append((SINUSOIDAL, parent, name, child))
                continue
            table = vars(child).get("embed_positions", child._buffers.get("embed_positions"))
            if not isinstance(table, torch.Tensor) or any(b.endswith("inv_freq") for b, _ in child.named_buffers()) \
                    or isinstance(vars(child).get("_get_embed_positions"), PatchedSinCos) \
                    or "_posenc_stock_table" in vars(child):
                continue
            if callable(getattr(child, "_get_embed_positions", None)):
                out.append((ATTENTION_TABLE, None, "", child))
            elif takes[:2] == ("x", "position_ids"):
                out.append((ROTARY_TABLE, None, "", child))
            elif expected == ATTENTION_BUFFER and "position_ids" in takes:
                out.append((ATTENTION_BUFFER, None, "", child))
    parents = {id(c): (p, n) for p in model.modules() for n, c in p.named_children()}
    return [(h, *parents[id(m)], m) if h == ROTARY_TABLE else (h, p, n, m) for h, p, n, m in out]


def _check_holders(model: Any, model_type: str, version: str, found: str | None) -> None:
    """Refuse, naming the family and the release, a holder that is not the one this release is known to use."""
    expected = expected_holder(model_type, version)
    tables = {h for h, *_ in _table_holders(model, expected)}
    seen = ({found} if found else set()) | tables
    if seen and seen != {expected}:
        raise PosEncError(f"model_type {model_type!r} under transformers {version}: its RoPE is held in "
                          f"{' and '.join(sorted(seen))}, where posenc has verified {expected} for this family and "
                          "release (posenc.hf.versions); not patched")
    if not seen and expected != ROTARY:
        raise PosEncError(f"model_type {model_type!r} under transformers {version}: posenc found no RoPE where it "
                          f"has verified this family's ({expected}: posenc.hf.versions); not patched")


def _patched_tables() -> tuple[type[Any], ...]:
    """posenc's replacements of RoPE tables (imported lazily: torch)."""
    from .tables import PatchedSinCosRotary, PatchedSinusoidal

    return PatchedSinCosRotary, PatchedSinusoidal


def _patch_tables(model: Any, model_type: str, version: str) -> int:
    """GPT-J / CodeGen's ``[sin | cos]`` tables and RoFormer's sinusoidal embedding, as this release holds them.

    Each is checked against posenc's rows at positions 0 … 7 before any
    change; :mod:`posenc.hf.tables` holds the replacements. Returns
    how many tables are posenc's now (already patched ones included).
    """
    torch = _torch()
    from .config import from_hf_config
    from .rotary import PatchedSinCos, rotary_for
    from .tables import HeldSinCos, PatchedSinCosRotary, PatchedSinusoidal, exact_table, sin_cos_rows

    expected = expected_holder(model_type, version)
    found = _table_holders(model, expected)
    done = sum(isinstance(m, _patched_tables()) or isinstance(vars(m).get("_get_embed_positions"), PatchedSinCos)
               or "_posenc_stock_table" in vars(m) for m in model.modules())
    if not found:
        return done
    config = model.config.to_dict()
    config.pop("rotary_value", None)  # RoFormer: whether the values turn too, the attention's business, not the rows'
    rope = from_hf_config(config)
    positions = torch.arange(_PROBE).reshape(1, _PROBE)
    rotary = rotary_for(rope)
    want_sin, want_cos = sin_cos_rows(rotary, positions)
    changes = []
    for holder, parent, name, module in found:
        with torch.no_grad():
            if holder == SINUSOIDAL:
                got = module(torch.Size((1, _PROBE)), 0).reshape(1, _PROBE, -1)
                stock = got.chunk(2, dim=-1)
            elif holder == ROTARY_TABLE:
                table = module.embed_positions
                other = torch.float32 if table.dtype == torch.float64 else torch.float64
                stock = module(torch.zeros(1, dtype=other, device=table.device), positions.to(table.device))
                cast = stock[0].dtype == other  # GPT-J casts to x's dtype, CodeGen keeps its table's
            else:
                table = module.embed_positions
                got = table[positions.to(table.device)]
                stock = got.chunk(2, dim=-1)
        ok = all(isinstance(t, torch.Tensor) and t.shape == w.shape and bool(torch.allclose(
            t.double().cpu(), w, atol=1e-5, rtol=0)) for t, w in zip(stock, (want_sin, want_cos), strict=True))
        if not ok:
            raise PosEncError(f"model_type {model_type!r} under transformers {version}: {holder} holds rows "
                              f"posenc does not reproduce from its config (read as {rope}); not patched")
        changes.append((holder, parent, name, module, cast if holder == ROTARY_TABLE else False))
    for holder, parent, name, module, cast in changes:  # every check before any change
        if holder == ATTENTION_TABLE:
            module._get_embed_positions = HeldSinCos(rope, module)  # an instance attribute shadows the method
        elif holder == ATTENTION_BUFFER:
            object.__setattr__(module, "_posenc_stock_table", module.embed_positions)
            held = module.embed_positions
            module.embed_positions = exact_table(rope, int(held.shape[0]), held)
        elif holder == ROTARY_TABLE:
            setattr(parent, name, PatchedSinCosRotary(module, rope, cast))
        else:
            setattr(parent, name, PatchedSinusoidal(module, rope))
    return done + len(changes)


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
    from .alibi import patch_alibi
    from .rotary import PatchedRotary
    from .tables import AxesPatchedRotary, SeqLenPatchedRotary

    model_type = _model_type(model)
    version = _transformers_version()
    check_release(version, model_type)
    if patch_alibi(model):
        return model
    found = _rotary_modules(model, model_type, version)
    with _named(model_type, version):
        plans = [(parent, name, module, _ropes(module, model)) for parent, name, module in found]
        targets = [_probe_target(module, model, ropes) for _, _, module, ropes in plans]  # meta or cast: rebuilt
        axes = [_per_axis(target, ropes) for target, (_, _, _, ropes) in zip(targets, plans, strict=True)]
        plans = [(p, n, m, r if a is None else a[1]) for (p, n, m, r), a in zip(plans, axes, strict=True)]
        forms = [_form(target, ropes) if a is None else a[0]  # every check before any change
                 for target, (_, _, _, ropes), a in zip(targets, plans, axes, strict=True)]
    for (parent, name, module, ropes), form, per_axis in zip(plans, forms, axes, strict=True):
        # 4.x M-RoPE; 4.x Phi-3, Gemma, DBRX (called with seq_len too); every other
        kind = AxesPatchedRotary if per_axis else SeqLenPatchedRotary if "seq_len" in _takes(module) else PatchedRotary
        replacement = kind(module, ropes, form, getattr(model.config, "max_position_embeddings", None))
        device = next((b.device for b in module.buffers()), None)
        setattr(parent, name, replacement if device is None else replacement.to(device))
    if not found and not any(isinstance(m, PatchedRotary) for m in model.modules()) and \
            not _patch_tables(model, model_type, version):
        raise PosEncError(_nothing_to_patch(model, model_type))
    return model


def _nothing_to_patch(model: Any, model_type: str) -> str:
    """Why a model is refused: what it has instead of a rotary module posenc reads (the refusal's wording)."""
    from .config import rope_layer_plan

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
    from .alibi import unpatch_alibi
    from .rotary import PatchedRotary, PatchedSinCos

    _model_type(model, "unpatch")
    unpatch_alibi(model)
    for parent in model.modules():
        for name, child in list(parent.named_children()):
            if isinstance(child, (PatchedRotary, *_patched_tables())):
                replaced: Any = child
                device = next((b.device for b in [*replaced.buffers(), *replaced.parameters()]), None)
                stock = replaced.stock
                setattr(parent, name, stock if device is None else stock.to(device))
        if isinstance(vars(parent).get("_get_embed_positions"), PatchedSinCos):
            del parent._get_embed_positions
        if "_posenc_stock_table" in vars(parent):  # CodeGen up to 5.23: its own table back, where it is now
            held = parent.embed_positions
            parent.embed_positions = vars(parent).pop("_posenc_stock_table").to(device=held.device, dtype=held.dtype)
    return model

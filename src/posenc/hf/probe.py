"""What a model's stock rotary module computes, read at positions 0 … 7 before posenc patches it.

:func:`posenc.hf.patch` reads each module's RoPE from the config (per layer
type where the layers differ: :func:`_ropes`), checks the module against a
float32 rebuild where it was cast or built on the meta device
(:func:`_probe_target`), and finds the form its modeling code reads, which
posenc's rows must reproduce (:func:`_form`; transformers 4.x's per-axis
M-RoPE output: :func:`_per_axis`). Nothing is changed here.
"""

from __future__ import annotations

import inspect
from typing import Any

from ..errors import PosEncError

_PROBE = 8  # positions 0 … 7: where the stock module is exact to float32, the form is found


def _torch() -> Any:
    try:
        import torch
    except ImportError as exc:  # pragma: no cover - exercised without torch
        raise ImportError("posenc.hf needs PyTorch and transformers: pip install 'posenc[hf]'") from exc
    return torch

def _takes(module: Any) -> tuple[str, ...]:
    """The names of ``module.forward``'s parameters: how the modeling code calls it."""
    try:
        return tuple(inspect.signature(module.forward).parameters)
    except (TypeError, ValueError):  # pragma: no cover - a forward without a signature (a C extension)
        return ()

def _select(module: Any, distinct: set[Any]) -> set[Any]:
    """The RoPE among ``distinct`` whose frequencies the module's ``inv_freq`` holds (4.x Gemma 3's two modules)."""
    import numpy as np

    from ..rope.frequencies import rope_frequencies

    held = getattr(module, "inv_freq", None)
    if held is None:
        return distinct
    torch = _torch()
    if held.is_meta:
        return distinct
    inv = held.detach().double().cpu().numpy()
    if held.dtype in (torch.float32, torch.float64):
        return {r for r in distinct if (mine := rope_frequencies(r).inv_freq).shape
                == inv.shape and bool(np.allclose(mine, inv, rtol=2e-6, atol=0))}
    # model.to(bfloat16) rounded the buffer: posenc's frequencies rounded the same way, then compared exactly
    return {r for r in distinct if (mine := rope_frequencies(r).inv_freq).shape == inv.shape
            and torch.equal(torch.tensor(mine, dtype=torch.float32).to(held.dtype), held.detach().cpu())}


def _ropes(module: Any, model: Any) -> dict[str | None, Any]:
    """layer type (None: the module takes none) -> RopeConfig, for what this module serves.

    Only the layer types the layers use: Mellum's and Laguna's rope dicts
    define ``sliding_attention`` beside ``full_attention``, but with every layer
    full their rotary module holds ``full_attention`` alone. A module whose
    ``layer_type`` has no default (Step3p7's) is called with it even when one
    type serves every layer.
    """
    from .config import rope_layer_plan

    config = getattr(module, "config", None) or model.config.get_text_config()
    kinds, layers = rope_layer_plan(config)
    used: dict[str | None, Any] = {k: r for k, r in kinds.items()
                                   if r is not None and (layers is None or k in layers)}
    name = type(module).__name__
    if not used:
        raise PosEncError(f"{name}: no layer of this model uses RoPE (every layer is NoPE); nothing to patch")
    takes = _takes(module)
    if "seq_len" in takes and any(r.scaling is not None and r.scaling.cache_key(2**31) != r.scaling.cache_key(None)
                                  for r in used.values()):
        # transformers 4.x Phi-3: its LongRoPE picks the factors by the seq_len its attention passes (the cache's
        # length), which posenc's rows (chosen by the positions) do not see
        raise PosEncError(f"{name} is called with seq_len, which decides its length-dependent "
                          f"scaling ({sorted(type(r.scaling).__name__ for r in used.values() if r.scaling)}); "
                          "posenc follows the positions, so it is not patched")
    param = inspect.signature(module.forward).parameters.get("layer_type")
    required = param is not None and param.default is inspect.Parameter.empty
    if param is not None and (len(used) > 1 or required):
        if layers is None or any(k in ("all", "nope") for k in used):
            raise PosEncError(f"{name} takes a layer_type, but the config names no layer types (layer_types) "
                              "for posenc to call it with; not patched")
        return dict(used)
    distinct = set(used.values())
    if len(distinct) > 1:  # one module per layer kind (4.x Gemma 3: rotary_emb, rotary_emb_local): read its inv_freq
        distinct = _select(module, distinct)
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


def _probe_target(module: Any, model: Any, ropes: dict[str | None, Any]) -> Any:
    """The module to check posenc's rows against: itself, or a float32 rebuild from its config.

    A model on the meta device holds no values to check; ``model.to(torch.bfloat16)``
    casts ``inv_freq`` to bfloat16 (``from_pretrained(dtype=torch.bfloat16)`` keeps it
    float32), and a later ``.to(torch.float64)`` keeps those rounded values in a
    float64 buffer. All are read from the config, as the module was built: the
    module is built again on the CPU from its config, in float32, and for a cast
    module its buffers must be that rebuild's rounded to bfloat16 or float16 (the
    config's RoPE, rounded), else the model is refused naming the buffer. A module
    that serves one of several RoPEs of its config without taking a layer type
    (4.x Gemma 3's ``rotary_emb_local``, built from an edited copy of the config)
    cannot be rebuilt from the config: a cast one is refused by name.
    """
    torch = _torch()
    floats = [(n, b) for n, b in module.named_buffers() if b.is_floating_point()]
    meta = any(b.is_meta for _, b in floats)
    low = [(n, b, b.dtype) for n, b in floats if not meta and b.dtype not in (torch.float32, torch.float64)]
    if not meta and not low:
        # a float32/float64 buffer holding values rounded to a half precision: model.to(bfloat16).to(float64)
        for half in (torch.bfloat16, torch.float16):
            held = [(n, b, half) for n, b in floats if n.endswith("inv_freq")]
            if held and all(torch.equal(b.to(half).to(b.dtype), b) for _, b, _ in held):
                low = held
                break
        if not low:
            return module
    name = type(module).__name__
    if meta:
        why = "is on the meta device (no values to check posenc's rows against)"
    elif low[0][1].dtype == low[0][2]:
        why = f"holds {low[0][0]} in {str(low[0][2]).removeprefix('torch.')} (model.to(dtype) cast it)"
    else:
        why = (f"holds {low[0][0]} in {str(low[0][1].dtype).removeprefix('torch.')} with values rounded to "
               f"{str(low[0][2]).removeprefix('torch.')} (model.to({str(low[0][2]).removeprefix('torch.')}) "
               "cast it, and a later .to() kept the rounded values)")
    config = getattr(module, "config", None) or model.config.get_text_config()
    if not meta and len(ropes) == 1 and None in ropes and _serves_one_of_several(config):
        raise PosEncError(f"{name} {why}, and it serves one of the several RoPEs its config defines without "
                          f"taking a layer type (read as {ropes[None]}), so posenc cannot rebuild it from the "
                          "config to check it; patch the model before casting: posenc.hf.patch(model).to(dtype)")
    try:
        with torch.device("cpu"):
            # 4.45's modules take (dim, max_position_embeddings, base, …, config=None): the config by name
            fresh = type(module)(config=config) if "config" in inspect.signature(type(module)).parameters \
                else type(module)(config)
    except Exception as exc:
        if not meta and all(v.dtype in (torch.float32, torch.float64) for _, v, _ in low):
            return module  # values that only look rounded (a power-of-two base): the probe checks them as they are
        raise PosEncError(f"{name} {why}, and posenc cannot rebuild it from its config to check it "
                          f"({type(exc).__name__}); patch the model before casting or once it is loaded: "
                          "posenc.hf.patch(model).to(dtype)") from None
    built = dict(fresh.named_buffers())
    for buffer, value, half in low:
        want = built.get(buffer)
        if want is not None and want.shape == value.shape and torch.equal(want.to(value.dtype), value.cpu()):
            continue  # float32 and float64 values the rebuild holds as they are: the module's own
        if want is None or want.shape != value.shape or not torch.equal(want.to(half).to(value.dtype), value.cpu()):
            raise PosEncError(f"{name} {why}, but its {buffer} is not its config's frequencies rounded to "
                              f"{str(half).removeprefix('torch.')}: it was changed after the model was "
                              "built; not patched")
    if not meta and all(v.dtype in (torch.float32, torch.float64) and torch.equal(built[b].to(v.dtype), v.cpu())
                        for b, v, _ in low):
        return module  # values a half precision holds exactly, as built: nothing was rounded
    return fresh


def _serves_one_of_several(config: Any) -> bool:
    """Whether the config defines RoPEs that differ between the layer types its layers use."""
    from .config import rope_layer_plan

    kinds, layers = rope_layer_plan(config)
    return len({r for k, r in kinds.items() if r is not None and (layers is None or k in layers)}) > 1


def _form(module: Any, ropes: dict[str | None, Any]) -> str:
    torch = _torch()
    from .rotary import multi_axis_rows, output_form, padded, rotary_for

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


def _per_axis(module: Any, ropes: dict[str | None, Any]) -> tuple[str, dict[str | None, Any]] | None:
    """transformers 4.x M-RoPE: (form, the RoPE of one axis) where the module returns each axis's rows, else None.

    Qwen2-VL's, Qwen2.5-VL's and GLM-4.1V's modules up to 4.57 return
    ``[n_axes, b, s, d]`` (every axis's rows over the whole ladder) and their
    attention picks each section's axis; 5.x modules do that selection
    themselves (:func:`_form`). Read from the module's output at positions
    whose axes differ.
    """
    import dataclasses

    torch = _torch()
    from .rotary import output_form, rotary_for

    if len(ropes) != 1 or next(iter(ropes.values())).sections is None:
        return None
    kind, rope = next(iter(ropes.items()))
    n = len(rope.sections)
    positions = torch.stack([torch.arange(_PROBE) * (a + 1) % _PROBE for a in range(n)]).reshape(n, 1, _PROBE)
    try:
        with torch.no_grad():
            stock = module(torch.zeros(1, _PROBE, 1), positions)
    except Exception:  # not this form: _form probes the module as 5.x's and reports what it does
        return None
    if not (isinstance(stock, tuple) and len(stock) == 2 and all(
            isinstance(t, torch.Tensor) and t.dim() == 4 and t.shape[:3] == (n, 1, _PROBE) for t in stock)):
        return None
    one = dataclasses.replace(rope, sections=None)
    rows = rotary_for(one).cache.lookup(_PROBE, positions=positions.reshape(n, _PROBE), batch=n)
    form = output_form(tuple(t.reshape(n, _PROBE, -1) for t in stock), rows[..., 0, :], rows[..., 1, :])
    if form is None:
        raise PosEncError(f"{type(module).__name__} returns each position axis's rows (transformers 4.x's M-RoPE), "
                          f"which posenc does not reproduce from its config (read as {one} per axis); not patched")
    return form, {kind: one}

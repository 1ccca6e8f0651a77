"""torch.compile of a patched transformers model: any position, no extra call, eager's bits (issue 31).

A freshly patched model compiled at once used to fail ("tensor positions or
offsets beyond the rows this module holds … call reserve(n)", advice that
PatchedRotary could not follow), and after one eager call it still failed
at position 10^5. The rows now come from one custom operator whose body is
the eager lookup, so the reference is the same patched model run eagerly:
the compiled logits (``aot_eager``: the same aten kernels) and the compiled
rotary's rows (inductor) must be its bits exactly.
"""

from __future__ import annotations

import copy
import warnings

import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from families import build  # noqa: E402
from matrix import require  # noqa: E402

import posenc.hf  # noqa: E402
from posenc.hf.rotary import PatchedRotary  # noqa: E402

IDS = torch.tensor([[5, 17, 42, 8, 91, 3, 60, 27]])
OFFSETS = (0, 100_000, 999_992, 4_000_000)  # the first of 8 positions; beyond every held row but the first


@pytest.fixture(autouse=True)
def _fresh_dynamo():
    """Each test compiles from scratch: no graph of an earlier test is reused, nor counted against the limit."""
    torch._dynamo.reset()
    yield
    torch._dynamo.reset()


def _logits(model, positions):
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return model(IDS, position_ids=positions).logits


def _fresh(name):
    """A patched model never called eagerly (its rotary holds no rows yet), and a twin with the same weights."""
    model, twin = posenc.hf.patch(build(name)), posenc.hf.patch(build(name))
    return model, twin


# llama3.1: one kind; gemma3: per-layer-type rows; llama4: complex freqs_cis; llama-dynamic: dynamic NTK's kept
# base (original 64: every offset here enlarges it); phi3.5-longrope: the long regime past 4096
@pytest.mark.parametrize("name", ["llama3.1", "gemma3", "llama4", "llama-dynamic", "phi3.5-longrope"])
def test_a_fresh_patched_model_compiled_fullgraph_is_eager_bit_for_bit_at_any_position(name):
    require(name)
    model, twin = _fresh(name)
    compiled = torch.compile(model, fullgraph=True, backend="aot_eager")
    for offset in OFFSETS:
        positions = torch.arange(offset, offset + IDS.shape[1]).reshape(1, -1)
        got, want = _logits(compiled, positions), _logits(twin, positions)
        assert torch.equal(got, want), (name, offset, (got - want).abs().max().item())


def test_the_issues_call_compiles_with_the_default_backend():
    cfg = transformers.LlamaConfig(vocab_size=96, hidden_size=64, intermediate_size=96, num_hidden_layers=1,
                                   num_attention_heads=4, num_key_value_heads=2)
    torch.manual_seed(0)
    model = posenc.hf.patch(transformers.LlamaForCausalLM(cfg).eval())
    twin = copy.deepcopy(model)
    compiled = torch.compile(model)
    with torch.no_grad():
        out = compiled(torch.tensor([[1, 2, 3, 4, 5]])).logits
        far = compiled(torch.tensor([[1, 2, 3, 4, 5]]), position_ids=torch.arange(10**5, 10**5 + 5)[None]).logits
        assert (out - twin(torch.tensor([[1, 2, 3, 4, 5]])).logits).abs().max().item() <= 1e-6
        want = twin(torch.tensor([[1, 2, 3, 4, 5]]), position_ids=torch.arange(10**5, 10**5 + 5)[None]).logits
    assert (far - want).abs().max().item() <= 1e-6  # inductor's own kernels for the rest of the model


def test_the_rotary_compiled_with_inductor_gives_eagers_rows():
    require("gemma3")
    model, _ = _fresh("gemma3")
    rotary = model.model.rotary_emb
    assert isinstance(rotary, PatchedRotary)
    compiled = torch.compile(rotary, fullgraph=True)
    x = torch.zeros(1, 4, 16)
    for kind in ("sliding_attention", "full_attention"):
        for positions in ([[0, 1, 2, 3]], [[99_999, 100_000, 7, 10**6]], [[2**24 + 1, 5, 123_456_789, 0]]):
            p = torch.tensor(positions)
            for got, want in zip(compiled(x, p, kind), rotary(x, p, kind), strict=True):
                assert torch.equal(got, want), (kind, positions)


def test_a_copy_compiled_reads_its_own_rows_after_the_original_is_gone():
    model, twin = _fresh("llama-dynamic")
    positions = torch.arange(1000, 1000 + IDS.shape[1]).reshape(1, -1)
    _logits(model, positions)  # the original's kept base is now 1008 long; the copy's too (it is copied state)
    clone = copy.deepcopy(model)
    assert clone.model.rotary_emb._key != model.model.rotary_emb._key
    _logits(twin, positions)
    del model
    compiled = torch.compile(clone, fullgraph=True, backend="aot_eager")
    short = torch.arange(100, 100 + IDS.shape[1]).reshape(1, -1)  # kept base: transformers' rule, as eagerly
    assert torch.equal(_logits(compiled, short), _logits(twin, short))


def test_patched_models_of_one_config_share_one_graph_and_each_reads_its_own_rows():
    """The key is a graph input, not a constant: a second model compiles with no recompile, with its own state."""
    first, second = _fresh("llama-dynamic")
    long = torch.arange(3000, 3000 + IDS.shape[1]).reshape(1, -1)
    _logits(second, long)  # second keeps the base of a 3008-long call; first has seen nothing
    short = torch.arange(100, 100 + IDS.shape[1]).reshape(1, -1)
    want_first, want_second = _logits(copy.deepcopy(first), short), _logits(copy.deepcopy(second), short)
    assert not torch.equal(want_first, want_second)
    assert torch.equal(_logits(torch.compile(first, fullgraph=True, backend="aot_eager"), short), want_first)
    with torch._dynamo.config.patch(error_on_recompile=True):
        got = _logits(torch.compile(second, fullgraph=True, backend="aot_eager"), short)
    assert torch.equal(got, want_second)


def test_torch_export_of_a_patched_model_runs_in_this_process_with_eagers_bits():
    """The exported program calls the operator (before: an unlift SyntaxError on the rows module named "None")."""
    model, twin = _fresh("llama3.1")
    far = torch.arange(10**6, 10**6 + IDS.shape[1]).reshape(1, -1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        program = torch.export.export(model, (IDS,), {"position_ids": far, "use_cache": False})
    assert "posenc.hf_rotary_rows" in program.graph_module.code
    with torch.no_grad():
        got = program.module()(IDS, position_ids=far, use_cache=False).logits
        want = twin(IDS, position_ids=far, use_cache=False).logits
    assert torch.equal(got, want)

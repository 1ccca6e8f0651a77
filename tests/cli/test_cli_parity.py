"""``posenc parity CONFIG``: the library's numbers in a table and as JSON; bad input in one line with exit 2."""

from __future__ import annotations

import json

import pytest

from cli_helpers import run, run_json
from posenc.parity import parity

YARN = {"head_dim": 128, "hidden_size": 4096, "num_attention_heads": 32, "max_position_embeddings": 131072,
        "rope_parameters": {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 32768,
                            "rope_theta": 1e6}}


@pytest.fixture
def config(tmp_path):
    path = tmp_path / "config.json"
    path.write_text(json.dumps(YARN))
    return str(path)


def test_the_table_holds_each_implementations_errors(capsys, config):
    code, out, err = run(capsys, "parity", config, "--positions", "0,100000")
    assert code == 0 and err == ""
    want = parity(YARN, [0, 100000])
    lines = out.splitlines()
    assert "scaling YaRN" in lines[0]
    row = next(line for line in lines if line.strip().startswith("transformers float32"))
    assert row.split()[-3:] == ["1.138629", f"{want.errors['transformers float32'][0]:.3g}",
                                f"{want.errors['transformers float32'][1]:.3g}"]
    assert "vLLM stock float32: not installed (vllm)" in out
    assert lines[-1] == "no setting differs from transformers' definition beyond the implementations' rounding"


def test_json_is_the_report(capsys, config):
    code, data = run_json(capsys, "parity", config, "--positions", "10,131071", "--json")
    want = parity(YARN, [10, 131071])
    assert code == 0
    assert data["positions"] == [10, 131071]
    assert data["errors"] == want.errors
    assert data["attention_factors"] == want.attention_factors
    assert data["disagreements"] == [] and "vLLM stock bfloat16" in data["unavailable"]


@pytest.mark.parametrize(("content", "args", "named"), [
    (None, [], "cannot read the config"),
    ("{not json", [], "is not JSON"),
    ("[1, 2]", [], "must hold a JSON object"),
    (json.dumps({"model_type": "bert", "hidden_size": 8}), [], "model_type"),
    (json.dumps(YARN), ["--positions", "-5"], "integers >= 0"),
    (json.dumps(YARN), ["--positions", "1,x"], "integers separated by commas"),
])
def test_bad_input_is_one_line_and_exit_2(capsys, tmp_path, content, args, named):
    path = tmp_path / "config.json"
    if content is not None:
        path.write_text(content)
    code, out, err = run(capsys, "parity", str(path), *args)
    assert code == 2 and out == ""
    assert len(err.strip().splitlines()) == 1 and err.startswith("posenc: error: ") and named in err

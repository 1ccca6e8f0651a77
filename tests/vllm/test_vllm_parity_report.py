"""posenc.parity's vLLM rows: stock vLLM measured (the plugin set aside), its departures from transformers named."""

from __future__ import annotations

import json

import numpy as np

import posenc.vllm
from cli_helpers import run_json
from posenc.parity import parity

HEAD = 64
DEEPSEEK = {"model_type": "deepseek_v3", "head_dim": HEAD, "hidden_size": 8 * HEAD, "num_attention_heads": 8,
            "max_position_embeddings": 16384, "rope_theta": 10000.0,
            "rope_scaling": {"type": "yarn", "factor": 4.0, "mscale": 0.707, "original_max_position_embeddings": 4096}}
PLAIN = {"head_dim": 128, "max_position_embeddings": 131072, "rope_theta": 1e6}


def test_stock_vllm_is_measured_even_with_the_plugin_loaded():
    assert posenc.vllm.registered()  # the session loaded the plugin (conftest): parity sets it aside
    rep = parity(PLAIN, positions=[10, 131071])
    assert rep.unavailable == {}
    assert rep.errors["vLLM stock float32"][1] > 1e-3  # float32 p·ω at 131071 (the plugin's rows: ~6e-8)
    assert rep.errors["vLLM stock bfloat16"][0] > 1e-3
    assert rep.errors["posenc float32"][1] < 1e-7


def test_deepseek_mscale_alone_names_vllms_attention_factor():
    """transformers: get_mscale(4) = 1.138629 unless mscale and mscale_all_dim are both set; vLLM: g(4, 0.707)."""
    rep = parity(DEEPSEEK, positions=[0, 100])
    vllm_factor = 0.1 * 0.707 * np.log(4.0) + 1
    assert abs(rep.attention_factors["vLLM stock float32"] - vllm_factor) < 1e-6
    named = f"attention factor: vLLM stock float32 {rep.attention_factors['vLLM stock float32']:.7g}"
    assert any(line.startswith(named) for line in rep.disagreements)
    assert not any(line.split(":")[1].strip().startswith("transformers") for line in rep.disagreements)
    assert rep.errors["vLLM stock float32"][0] > 0.03 > rep.errors["transformers float32"][0]


def test_the_command_prints_the_vllm_rows(capsys, tmp_path):
    path = tmp_path / "config.json"
    path.write_text(json.dumps(DEEPSEEK))
    code, data = run_json(capsys, "parity", str(path), "--positions", "0,16383", "--json")
    assert code == 0
    assert set(data["errors"]) >= {"vLLM stock float32", "vLLM stock bfloat16"}
    assert any("vLLM stock float32" in line for line in data["disagreements"])

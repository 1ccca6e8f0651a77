"""The vLLM tests' setting: vLLM's layers on this CPU, the plugin loaded through vLLM's entry point once.

These tests run in ``.venv-vllm`` (``make test-vllm``), never in the main
environment (pyproject's ``norecursedirs``).
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import vllm.plugins
from vllm.config import DeviceConfig, VllmConfig, set_current_vllm_config


@pytest.fixture(scope="session", autouse=True)
def cpu_vllm() -> Iterator[None]:
    """vLLM's config for the CPU (``get_rope`` and ``forward_native`` need a current config), plugins loaded."""
    with set_current_vllm_config(VllmConfig(device_config=DeviceConfig(device="cpu"))):
        vllm.plugins.load_general_plugins()  # the entry point, as every vLLM process does
        yield

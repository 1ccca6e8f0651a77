"""The SGLang tests' setting: SGLang's CPU layers, the plugin run through SGLang's entry point once.

These tests run in ``.venv-sglang`` (``make test-sglang``), never in the main
environment (pyproject's ``norecursedirs``).
"""

from __future__ import annotations

import os

os.environ.setdefault("SGLANG_USE_CPU_ENGINE", "1")  # SGLang's CPU layers (else its base layer imports vllm)

import pytest
import sglang.srt.plugins


@pytest.fixture(scope="session", autouse=True)
def sglang_plugins() -> None:
    """The general plugins loaded and their hooks applied, as every SGLang process does."""
    sglang.srt.plugins.load_plugins()

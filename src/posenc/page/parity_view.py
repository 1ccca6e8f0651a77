"""The ``posenc parity`` table in the RoPE and scalings precision views: :func:`posenc.parity.parity` at build time.

For each setting the explorers offer that a Hugging Face ``config.json``
can state (full rotary; plain RoPE and the linear, dynamic, YaRN, Llama 3.1
and LongRoPE scalings), the page carries what ``posenc parity CONFIG``
prints for that config: per implementation the largest cos/sin error
against the exact value at the positions 0, 1, 10, … 999 999, the
implementations that could not be measured and why, and the settings on
which they disagree. The page is static, so these are computed when it is
built, by whatever this Python has installed (transformers, vLLM); the
script only picks the table of the current setting.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Iterator
from typing import Any

from .rope_data import (
    BETAS,
    FACTORS,
    HEAD_DIMS,
    KINDS,
    ORIGINAL_MAX,
    ROPE_BASES,
    SCALING_BASES,
    SCALING_HEAD,
    longrope_factors,
)

__all__ = ["PARITY_POSITIONS", "hf_config", "parity_data", "rope_parity_data", "scaling_parity_data"]

#: The positions of every table: the precision view's decades, 0 and 1 (parity's default for a 10^6 context).
PARITY_POSITIONS = [0, 1, 10, 100, 1000, 10000, 100000, 999999]


def hf_config(head_dim: int, base: float, kind: str = "none", factor: float = 1.0, beta: float = 32.0
              ) -> dict[str, Any] | None:
    """The ``config.json`` fields of one explorer setting, or None where transformers has no such rope type.

    >>> hf_config(64, 10000.0)["rope_theta"], hf_config(64, 1e4, "ntk", 2.0)
    (10000.0, None)
    """
    cfg: dict[str, Any] = {"head_dim": head_dim, "hidden_size": head_dim, "num_attention_heads": 1,
                           "rope_theta": base, "max_position_embeddings": 10**6}
    if kind == "none":
        return cfg
    long = int(ORIGINAL_MAX * factor)
    scaling: dict[str, Any]
    if kind in ("linear", "dynamic"):
        scaling = {"rope_type": kind, "factor": factor}
    elif kind == "yarn":
        scaling = {"rope_type": "yarn", "factor": factor, "original_max_position_embeddings": ORIGINAL_MAX,
                   "beta_fast": beta, "beta_slow": 1.0}
    elif kind == "llama3":
        scaling = {"rope_type": "llama3", "factor": factor, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                   "original_max_position_embeddings": ORIGINAL_MAX}
    elif kind == "longrope":
        short, lng = longrope_factors(factor, head_dim // 2)
        scaling = {"rope_type": "longrope", "short_factor": list(short), "long_factor": list(lng),
                   "original_max_position_embeddings": ORIGINAL_MAX, "factor": factor}
    else:
        return None
    if kind != "dynamic":
        cfg["max_position_embeddings"] = long
    cfg["rope_scaling"] = scaling
    return cfg


@contextlib.contextmanager
def _quiet() -> Iterator[None]:
    """transformers' logger held at errors while the tables are built (its config notes are not the page's)."""
    try:
        from transformers.utils import logging as hf_logging
    except ImportError:
        yield
        return
    level = hf_logging.get_verbosity()
    hf_logging.set_verbosity_error()
    try:
        yield
    finally:
        hf_logging.set_verbosity(level)


def _table(cfg: dict[str, Any]) -> dict[str, Any]:
    from ..parity import parity

    rep = parity(cfg, PARITY_POSITIONS)
    return {"errors": {k: [None if math.isnan(v) else v for v in vs] for k, vs in rep.errors.items()},
            "unavailable": dict(rep.unavailable), "disagreements": list(rep.disagreements)}


def rope_parity_data() -> dict[str, Any]:
    """One table per (head_dim, base) of the RoPE explorer, keyed ``head|base index``."""
    with _quiet():
        tables = {f"{h}|{bi}": _table(hf_config(h, b) or {}) for h in HEAD_DIMS for bi, b in enumerate(ROPE_BASES)}
    return {"positions": PARITY_POSITIONS, "tables": tables}


def scaling_parity_data() -> dict[str, Any]:
    """One table per (variant, base, factor, β_fast) of the scalings explorer that a config can state.

    Keyed as the explorer's ladders (:func:`posenc.page.rope_data.scaling_key`), the knob 0 but for YaRN's β.
    """
    tables = {}
    with _quiet():
        for bi, b in enumerate(SCALING_BASES):
            for kind, _, knob in KINDS:
                for fi, fac in enumerate(FACTORS[:1] if kind == "none" else FACTORS):  # none: no factor
                    for k in range(len(BETAS) if knob == "beta" else 1):
                        cfg = hf_config(SCALING_HEAD, b, kind, fac, BETAS[k] if knob == "beta" else 32.0)
                        if cfg is not None:
                            tables[f"{kind}|{bi}|{fi}|{k}"] = _table(cfg)
    return {"positions": PARITY_POSITIONS, "tables": tables}


def parity_data(which: str) -> dict[str, Any]:
    """``"rope"`` or ``"scaling"``: the tables of that explorer.

    What could not be measured is usually the same for every table (a package not installed): then it is
    said once, as ``unavailable``, and the tables leave it out.
    """
    data = rope_parity_data() if which == "rope" else scaling_parity_data()
    tables = list(data["tables"].values())
    if tables and all(t["unavailable"] == tables[0]["unavailable"] for t in tables):
        data["unavailable"] = tables[0]["unavailable"]
        for t in tables:
            del t["unavailable"]
    return data

"""Long-context RoPE scalings, each as Hugging Face transformers defines it: one file per scaling, class and reader.

Every variant is a frozen dataclass. :func:`posenc.rope.rope_frequencies`
takes one and asks it, through ``scale(dim, base, seq_len)``, for the inverse
frequencies of a rotary dimension ``dim`` and base ``b`` (plain RoPE:
ω_i = b**(-2i/dim), i = 0 … dim/2 - 1). The frequencies are computed with
:mod:`decimal` at 70 digits, so the exact tables of :mod:`posenc.exact` stay
exact; the formulas are those of ``src/transformers/modeling_rope_utils.py``
in huggingface/transformers (the ``_compute_*_parameters`` functions, read at
main in 2025/2026; older releases differ where noted).

Two variants depend on the sequence length ``seq_len`` (HF passes
``max(position_ids) + 1``): :class:`DynamicNTK` (its base) and
:class:`LongRoPE` (short or long factors). Their ``cache_key`` says what of
``seq_len`` matters, and every table posenc builds is keyed on it: one table
never mixes two rotations. A KV cache whose keys were rotated under one
effective base must be re-rotated (or the length fixed) when the base
changes; posenc does not do that behind your back.

Each file holds one scaling: its class and its reader, ``read_*(rope_dict,
config_dict)``, which turns a Hugging Face rope dict into the class
(:data:`READERS`, registered by :mod:`posenc.rope.registry`). What they share
is in :mod:`~posenc.rope.scaling.scaled` (the result and its checks) and
:mod:`~posenc.rope.scaling.reading` (the keys and lengths of a rope dict).
Adding one is a new file here and a line in :data:`READERS`
(docs/how-to/extending.md).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from .linear import Linear, read_linear
from .llama3 import Llama3, read_llama3
from .longrope import LongRoPE, read_longrope
from .ntk import NTK, DynamicNTK, read_dynamic
from .proportional import Proportional, read_proportional
from .reading import read_axial, read_default
from .scaled import Scaled
from .yarn import YaRN, read_yarn

__all__ = [
    "NTK",
    "READERS",
    "SCALINGS",
    "DynamicNTK",
    "Linear",
    "Llama3",
    "LongRoPE",
    "Proportional",
    "Scaled",
    "YaRN",
]

#: Every scaling variant, for isinstance checks.
SCALINGS = (Linear, NTK, DynamicNTK, YaRN, Llama3, LongRoPE, Proportional)

#: Hugging Face ``rope_type`` -> the reader of its rope dict (the built-ins of :mod:`posenc.rope.registry`).
READERS: dict[str, Callable[[Mapping[str, Any], Mapping[str, Any]], Any]] = {
    "default": read_default,
    "axial": read_axial,
    "linear": read_linear,
    "dynamic": read_dynamic,
    "yarn": read_yarn,
    "longrope": read_longrope,
    "llama3": read_llama3,
    "proportional": read_proportional,  # Gemma 4
}

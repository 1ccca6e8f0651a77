"""The seed's worked cases and self-test, every number computed by posenc.

:mod:`~posenc.seed.cells` holds cells A–H of the founding document,
:mod:`~posenc.seed.self_test` its self-test, :mod:`~posenc.seed.misprints` the
figures it misprints; :mod:`~posenc.seed.claims` the pieces a worked case is
made of, shared with every family's worked cases; :mod:`~posenc.seed.grid_cases`
the worked cases for grids (n-D sinusoids, multi-axis RoPE),
:mod:`~posenc.seed.bias_cases` those of the relative biases (ALiBi, T5 buckets, xPos),
:mod:`~posenc.seed.time_cases` those of diffusion timesteps and neural-field coordinates,
:mod:`~posenc.seed.rope_cases` those of RoPE and its long-context scalings.
"""

from . import bias_cases, rope_cases, time_cases
from .cells import CELLS, case, cases
from .claims import Case, Check, Printed
from .grid_cases import GRID_CELLS, grid_case, grid_cases
from .misprints import errata
from .self_test import QuizItem, quiz

__all__ = [
    "CELLS",
    "GRID_CELLS",
    "Case",
    "Check",
    "Printed",
    "QuizItem",
    "bias_cases",
    "case",
    "cases",
    "errata",
    "grid_case",
    "grid_cases",
    "quiz",
    "rope_cases",
    "time_cases",
]

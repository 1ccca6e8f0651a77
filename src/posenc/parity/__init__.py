"""How far the usual implementations drift from the exact value: a checkpoint's engines, and the usual tables.

- :mod:`.checkpoint`: :func:`parity`, trainer/inference parity of a
  checkpoint's RoPE (transformers, vLLM, posenc), behind ``posenc parity CONFIG``;
- :mod:`.precision`: the precision view's numbers (the float32 angle, the
  bfloat16 and float16 tables, diffusers' float32 timesteps), behind the
  page's precision view and :func:`posenc.plot.plot_precision`.
"""

from .checkpoint import IMPLEMENTATIONS, ParityReport, default_positions, parity
from .precision import POSITIONS, bf16_of, rope_precision, timestep_precision

__all__ = ["IMPLEMENTATIONS", "POSITIONS", "ParityReport", "bf16_of", "default_positions", "parity", "rope_precision",
           "timestep_precision"]

"""The benchmark behind ``posenc bench``: posenc against the forms people use today.

Every operation is timed side by side with its *floor* — the cost of merely
writing the output (``np.empty(shape, np.float32).fill(1.0)``) or of copying
the inputs (``q.clone(); k.clone()``) — in the same run, interleaved
repetition by repetition in a new order each time, and reported as the
ratio of medians; posenc and the reference recipes run in separate groups,
each beside its own floor, and the heap keeps freed memory so page faults
do not move from one method to another (:mod:`~posenc.bench.measure`).
Shared, noisy machines change the milliseconds, much less the ratios.
Accuracy is measured on sampled rows against posenc's exact path, in
float32 ulps.

:mod:`~posenc.bench.tables` holds the NumPy rows, :mod:`~posenc.bench.torch_rows`
the torch rows (imported only when torch is), :mod:`~posenc.bench.measure`
how they are measured and :mod:`~posenc.bench.report` the table.
"""

from .report import Report, Row, format_markdown, format_report, machine_line
from .tables import run

__all__ = ["Report", "Row", "format_markdown", "format_report", "machine_line", "run"]

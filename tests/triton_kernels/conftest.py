"""posenc.triton's tests run the kernels on CPU tensors through Triton's interpreter (set before triton loads).

The folder is not named tests/triton: without Triton installed, torch's own ``import triton`` would find it
(``tests/`` is on sys.path) as a namespace package named ``triton``.
"""

import os

os.environ.setdefault("TRITON_INTERPRET", "1")

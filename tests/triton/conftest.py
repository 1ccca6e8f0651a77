"""The Triton tests run the kernels on CPU tensors through Triton's interpreter (set before triton is imported)."""

import os

os.environ.setdefault("TRITON_INTERPRET", "1")

"""Neural fields: frequency encodings of coordinates (NeRF, nerfstudio, tiny-cuda-nn) and Fourier features.

:mod:`~posenc.fields.conventions` holds the presets and their registry;
:mod:`~posenc.fields.functions` writes :func:`nerf_encoding` and
:func:`fourier_features` once over a backend (:mod:`~posenc.fields.backend`),
:mod:`~posenc.fields.numpy_backend` computes them from :mod:`posenc.exact`'s angles.
"""

from .conventions import CONVENTIONS, FieldConvention, FieldPlan, NeRF, Nerfstudio, TinyCudaNN, get, register
from .encoding import fourier_features, nerf_encoding

__all__ = [
    "CONVENTIONS",
    "FieldConvention",
    "FieldPlan",
    "NeRF",
    "Nerfstudio",
    "TinyCudaNN",
    "fourier_features",
    "get",
    "nerf_encoding",
    "register",
]

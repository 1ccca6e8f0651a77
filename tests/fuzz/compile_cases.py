"""One call per public name for the compile test (tests/fuzz/test_fuzz_compile.py), keyed like the fuzz table.

:data:`COMPILE` maps every name of :data:`test_fuzz_api.CASES` (the public
callables of ``posenc``) and every name of ``posenc.torch.__all__`` to a
:class:`Call`: a function run inside ``torch.compile`` and the tensors it is
called with. Each is one representative call with small inputs, chosen so
that the NumPy core meets what Dynamo's NumPy emulation mistranslates
(``where=`` sign fixes, ``nditer``, ``decimal``, ``lru_cache``): positions
arrive as ``t.numpy()`` of a tensor, as a user's compiled code would pass
them.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

import posenc
import posenc.torch as pt
from posenc import conventions, conventions_nd


@dataclass(frozen=True)
class Call:
    """``fn(*args())`` is compiled and compared with eager; ``args`` makes fresh inputs for each run."""

    fn: Callable[..., Any]
    args: Callable[[], tuple[Any, ...]]


#: a fresh name per registration made inside a compiled function
_FRESH = itertools.count()


def _pos() -> tuple[torch.Tensor]:
    return (torch.tensor([0.0, 1.0, 3.0, 1000.0], dtype=torch.float64),)


def _x() -> tuple[torch.Tensor]:
    g = torch.Generator().manual_seed(0)
    return (torch.randn(1, 2, 4, 8, generator=g, dtype=torch.float64),)


def _on_pos(fn: Callable[[np.ndarray], Any]) -> Call:
    return Call(lambda t: fn(t.numpy()), _pos)


_SCALINGS = {
    "Linear": lambda: posenc.Linear(2.0),
    "NTK": lambda: posenc.NTK(2.0),
    "DynamicNTK": lambda: posenc.DynamicNTK(2.0, 16),
    "YaRN": lambda: posenc.YaRN(4.0, 16),
    "Llama3": lambda: posenc.Llama3(8.0, 1.0, 4.0, 16),
    "LongRoPE": lambda: posenc.LongRoPE((1.0, 1.5, 2.0, 3.0), (2.0, 4.0, 6.0, 8.0), 16),
}


class _Ramp:
    """A TableCache builder: row p is [p, -p]."""

    def rows(self, start: int, length: int, dtype: np.dtype) -> np.ndarray:
        return self.at(np.arange(start, start + length), dtype)

    def at(self, p: np.ndarray, dtype: np.dtype) -> np.ndarray:
        return np.stack([p, -p], axis=1).astype(dtype)


def _torch_cases() -> dict[str, Call]:
    """posenc.torch: modules built once, eagerly (as a model is), their forward compiled."""
    alibi, t5 = pt.AlibiBias(4), pt.T5RelativeBias(4)
    rope = pt.RotaryEmbedding(8, base=100.0, scaling=posenc.YaRN(4.0, 16))
    eva = posenc.rope_preset("eva02", head_dim=8)
    rope_real = pt.RotaryEmbedding(8, layout=eva.layout, **eva.kwargs())
    pe = pt.SinusoidalPositionalEncoding(8, convention="fairseq")
    cache = pt.TableCache(_Ramp(), (2,), stop=16)
    steps, nerf = pt.Timesteps(9, True, 0), pt.NeRFEncoding(4, convention="nerfstudio", include_input=True)
    ff = pt.FourierFeatures(torch.tensor([[1.0, 2.0, -3.0], [0.5, 0.0, 7.0]]))
    return {
        "AlibiBias": Call(lambda: alibi(3, 5, offset=2), tuple),
        "T5RelativeBias": Call(lambda: t5(3, 5, offset=2), tuple),
        "RotaryEmbedding": Call(lambda x: rope(x, x.float(), offset=3), _x),
        "RotaryEmbedding.real_positions": Call(lambda x, c: rope_real(x, x, positions=c), lambda: (
            torch.randn(1, 2, 4, 8, generator=torch.Generator().manual_seed(0)),
            torch.tensor(posenc.eva02_coords((2, 2), (3, 3))))),
        "SinusoidalPositionalEncoding": Call(lambda x: pe(x[0].float(), offset=5), _x),
        "TableCache": Call(lambda i: cache.lookup(3, positions=i), lambda: (torch.tensor([4, 0, 15]),)),
        "apply_rope": Call(lambda x, t: pt.apply_rope(x, t, base=100.0), lambda: (*_x(), _pos()[0])),
        "encode": Call(lambda t: pt.encode(t, 8, dtype=torch.float64), _pos),
        "table": Call(lambda: pt.table(5, 9, start=-2, convention="fairseq"), tuple),
        "positions_from_cu_seqlens": Call(pt.positions_from_cu_seqlens, lambda: (torch.tensor([0, 3, 5]),)),
        "Timesteps": Call(lambda t: steps(t), lambda: (torch.tensor([0.0, 0.5, 999.0, 12.25]),)),
        "NeRFEncoding": Call(lambda x: nerf(x), lambda: (torch.tensor([[0.1, -0.7, 0.3], [1.0, 0.0, -1.0]]),)),
        "FourierFeatures": Call(lambda x: ff(x), lambda: (torch.tensor([[0.1, -0.7, 0.3], [1.0, 0.0, -1.0]]),)),
        "rope_cos_sin": Call(lambda t: pt.rope_cos_sin(t, 8, scaling=_SCALINGS["LongRoPE"]()), _pos),
        "timestep_embedding": Call(lambda t: pt.timestep_embedding(t, 9, convention="flux"), _pos),
        "nerf_encoding": Call(lambda x: pt.nerf_encoding(x, 4, convention="tcnn", include_input=True), _fields),
        "fourier_features": Call(lambda x: pt.fourier_features(x, torch.tensor([[1.0, 2.0, -3.0], [0.5, 0.0, 7.0]])),
                                 _fields),
        "alibi_bias": Call(lambda: pt.alibi_bias(3, 5, 6, offset=2, dtype=torch.float64), tuple),
        "t5_bucket": Call(lambda t: pt.t5_bucket(t.long() - 500, bidirectional=False), _pos),
        "t5_bias": Call(lambda w: pt.t5_bias(w, 3, 5, offset=2), lambda: (torch.arange(64.0).reshape(32, 2),)),
        "encode_nd": Call(lambda c: pt.encode_nd(c, 8, convention="mae", cls_token=True),
                          lambda: (torch.tensor([[0.0, 1.0], [3.0, 2.0]]),)),
    }


def _fields() -> tuple[torch.Tensor]:
    return (torch.tensor([[0.1, -0.7, 0.3], [1.0, 0.0, -1.0]]),)


def _numpy_cases() -> dict[str, Call]:
    p = posenc
    return {
        "encode": _on_pos(lambda a: p.encode(a, 8)),
        "table": Call(lambda: p.table(5, 8, start=-2, dtype=np.float64), tuple),
        "frequencies": Call(lambda: p.frequencies(8), tuple),
        "wavelengths": Call(lambda: p.wavelengths(8), tuple),
        "max_wavelength": Call(lambda: p.max_wavelength(8), tuple),
        "min_base": Call(lambda: p.min_base(5000.0, 8), tuple),
        "context_report": Call(lambda: p.context_report(5000.0, 8), tuple),
        "shift_matrix": Call(lambda: p.shift_matrix(3, 8), tuple),
        "shift": _on_pos(lambda a: p.shift(p.encode(a, 8, dtype=np.float64), 3)),
        "similarity": _on_pos(lambda a: p.similarity(a, a[::-1], 8)),
        "aliasing": Call(lambda: p.aliasing(0, 7, 8), tuple),
        "min_separation": Call(lambda: p.min_separation(20, 8), tuple),
        "rope_frequencies": Call(lambda: p.rope_frequencies(8, scaling=p.YaRN(4.0, 16)), tuple),
        "rope_cos_sin": _on_pos(lambda a: p.rope_cos_sin(a, 8, scaling=_SCALINGS["LongRoPE"]())),
        "rope_table": Call(lambda: p.rope_table(p.rope_frequencies(8), -2, 5), tuple),
        "apply_rope": Call(lambda x, t: p.apply_rope(x.numpy(), t.numpy(), xpos=p.XPos(), role="k"),
                           lambda: (*_x(), _pos()[0])),
        "rope_context_report": Call(lambda: p.rope_context_report(5000.0, 8, scaling=p.NTK(2.0)), tuple),
        "qk_permutation": Call(lambda: p.qk_permutation(8, 2, "half", "interleaved"), tuple),
        "permute_qk_weights": Call(lambda w: p.permute_qk_weights(w.numpy(), 2, "interleaved", "half"),
                                   lambda: (torch.arange(48.0).reshape(16, 3),)),
        "from_hf_config": Call(lambda: p.from_hf_config({"head_dim": 8, "rope_theta": 500.0, "rope_scaling": {
            "rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
            "original_max_position_embeddings": 16}}), tuple),
        **{name: Call(make, tuple) for name, make in _SCALINGS.items()},
        "alibi_slopes": Call(lambda: p.alibi_slopes(6, convention="mpt"), tuple),
        "alibi_bias": Call(lambda: p.alibi_bias(3, 5, 6, offset=2, dtype=np.float64), tuple),
        "t5_bucket": _on_pos(lambda a: p.t5_bucket(a.astype(np.int64) - 500, bidirectional=False)),
        "t5_bias": Call(lambda w: p.t5_bias(w.numpy(), 3, 5, offset=2), lambda: (torch.arange(64.0).reshape(32, 2),)),
        "t5_bucket_edges": Call(lambda: p.t5_bucket_edges(num_buckets=8, max_distance=20), tuple),
        "xpos_decay": _on_pos(lambda a: p.xpos_decay(a, 8)),
        "xpos_scale": _on_pos(lambda a: p.xpos_scale(a, 8, role="k", dtype=np.float32)),
        "XPos": Call(lambda: p.XPos(gamma=0.3, scale_base=64.0), tuple),
        "grid": Call(lambda: p.grid(2, 3), tuple),
        "encode_nd": Call(lambda c: p.encode_nd(c.numpy(), 8, convention="mae", cls_token=True),
                          lambda: (torch.tensor([[0.0, 1.0], [3.0, 2.0]]),)),
        "grid_report": Call(lambda: p.grid_report((4, 6), 8), tuple),
        "grid_similarity": Call(lambda: p.grid_similarity((3, 4), 8, (1, 2)), tuple),
        "rope_grid_report": Call(lambda: p.rope_grid_report((2, 4, 4), 16, sections=(2, 3, 3)), tuple),
        "Text": Call(lambda: p.Text(3), tuple),
        "VisionGrid": Call(lambda: p.VisionGrid(1, 2, 2, time_step=0.5), tuple),
        "VisionGrid.from_processor": Call(lambda: p.VisionGrid.from_processor(
            [2, 4, 4], tokens_per_second=2, second_per_grid=0.5), tuple),
        "mrope_positions": Call(lambda: p.mrope_positions([p.Text(2), p.VisionGrid(1, 2, 2), p.Text(1)]), tuple),
        "mrope_decode_positions": Call(lambda: p.mrope_decode_positions(-3, 7, count=2), tuple),
        "Sections": Call(lambda: p.Sections((2, 1, 1), layout="interleaved"), tuple),
        "conventions_nd.Axial": Call(lambda: conventions_nd.Axial(base=100.0), tuple),
        "conventions_nd.MAE": Call(lambda: conventions_nd.MAE(base=100.0), tuple),
        "conventions_nd.BigVision": Call(lambda: conventions_nd.BigVision(temperature=100.0), tuple),
        "conventions_nd.Timm": Call(lambda: conventions_nd.Timm(temperature=100.0, reverse_coord=True), tuple),
        "conventions.get": Call(lambda: conventions.get("keras").table(3, 8), tuple),
        "conventions.Vaswani": _on_pos(lambda a: conventions.Vaswani(base=100.0).encode(a, 8)),
        "conventions.Tensor2Tensor": _on_pos(lambda a: conventions.Tensor2Tensor(max_timescale=100.0).encode(a, 8)),
        "conventions.Fairseq": _on_pos(lambda a: conventions.Fairseq(padding_idx=0).encode(a, 8)),
        "conventions.Keras": Call(lambda: conventions.Keras(max_wavelength=100.0).table(4, 8, start=-1), tuple),
        # each run registers a fresh name (the eager run and the compiled one)
        "register_convention": Call(lambda name: p.register("sinusoid", name, conventions.Keras()),
                                    lambda: (f"compiled-{next(_FRESH)}",)),
        "register_alibi": Call(lambda name: p.register("alibi", name, p.bias.Mpt(alibi_bias_max=4.0)),
                               lambda: (f"compiled-alibi-{next(_FRESH)}",)),
        "register": Call(lambda name: p.register("alibi", name, p.bias.Mpt(alibi_bias_max=8.0)),
                         lambda: (f"compiled-register-{next(_FRESH)}",)),
        "timestep_embedding": _on_pos(lambda a: p.timestep_embedding(a, 9, convention="flux")),
        "nerf_encoding": _on_pos(lambda a: p.nerf_encoding(a[:, None] / 1000, 4, convention="tcnn")),
        "fourier_features": _on_pos(lambda a: p.fourier_features(a[:, None] / 1000, [[1.0], [-2.5]])),
        "rope_preset": Call(lambda: p.rope_preset("wan", head_dim=64), tuple),
        "eva02_coords": Call(lambda: p.eva02_coords((3, 2), (6, 6)), tuple),
        "dinov3_coords": Call(lambda: p.dinov3_coords(3, 2), tuple),
        # public names that the fuzz leaves out (results, data), where a compiled function could make one
        "RopeConfig": Call(lambda: p.RopeConfig(8, 8, 100.0, None, 16), tuple),
        "register_scaling": Call(lambda: p.register("scaling", "compile_case", lambda rope, cfg: None, replace=True),
                                 tuple),
    }


def compile_cases() -> dict[str, dict[str, Call]]:
    """``{"posenc": {...}, "posenc.torch": {...}}``: the calls, built fresh (modules too) for each test."""
    return {"posenc": _numpy_cases(), "posenc.torch": _torch_cases()}

"""Fuzz every public function with hostile arguments (issue 10): a correct result, or a PosEncError naming the value.

:data:`CASES` is the table: one :class:`Case` per public callable of
``posenc`` — its arguments as a hypothesis strategy of keyword dicts, and a
check of the result against the formula (an mpmath reference or an
identity written here). A new public function adds one row; the last test
fails until it does. Allowed outcomes, and nothing else:

- a result that passes its check;
- PosEncError whose message names an argument or shows its value;
- TypeError, only for a plainly wrong Python type where the signature has
  none to check (an object with no ``shape``; a config that is no mapping
  is a PosEncError).

Examples per function: the hypothesis profile (tests/conftest.py: "posenc", 60, for
the suite; "deep", 600, with HYPOTHESIS_PROFILE=deep); inputs are small or far beyond
any machine, so the whole file runs in seconds.
"""

from __future__ import annotations

import dataclasses
import inspect
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import hypothesis.strategies as st
import mpmath
import numpy as np
import pytest
from fuzz_checks import (
    _check_aliasing,
    _check_alibi_bias,
    _check_alibi_slopes,
    _check_apply_rope,
    _check_context_report,
    _check_convention,
    _check_encode,
    _check_encode_nd,
    _check_freqs,
    _check_frequencies,
    _check_from_processor,
    _check_get,
    _check_grid,
    _check_grid_report,
    _check_grid_similarity,
    _check_hf,
    _check_max_wavelength,
    _check_min_base,
    _check_min_separation,
    _check_mrope_decode,
    _check_mrope_positions,
    _check_mrope_text,
    _check_permutation,
    _check_permute_weights,
    _check_register_convention,
    _check_rope_context,
    _check_rope_cos_sin,
    _check_rope_table,
    _check_scaling,
    _check_sections,
    _check_shift,
    _check_shift_matrix,
    _check_similarity,
    _check_t5_bias,
    _check_t5_bucket,
    _check_t5_edges,
    _check_table,
    _check_vision_grid,
    _check_wavelengths,
    _check_xpos,
    _check_xpos_decay,
    _check_xpos_scale,
)
from fuzz_checks_fields import (
    FIELD_FORMULAS,
    ROPE_PRESET_SECTIONS,
    TIMESTEP_FORMULAS,
    check_dinov3_coords,
    check_eva02_coords,
    check_fourier_features,
    check_nerf_encoding,
    check_rope_preset,
    check_timestep_embedding,
)
from hypothesis import given

import posenc
from hostile import bases, d_models, dtypes, junk, layouts, lengths, names_the_value, positions, reals, small_ints
from posenc import PosEncError, conventions
from posenc.bias import Bloom, Mpt, Press, T5Buckets

mpmath.mp.dps = 60


@dataclass(frozen=True)
class Case:
    """One public callable: how to call it with hostile arguments and how to judge what comes back."""

    call: Callable[..., Any]
    args: st.SearchStrategy[dict[str, Any]]
    check: Callable[[Any, dict[str, Any]], None]
    names: tuple[str, ...] = ()  # how messages may name the arguments besides their keywords


def _kw(**fields: st.SearchStrategy[Any]) -> st.SearchStrategy[dict[str, Any]]:
    """Keyword dicts; every field is sometimes left out (the default), except positional ones (ALL CAPS)."""
    required = {k.lower(): v for k, v in fields.items() if k.isupper()}
    optional = {k: v for k, v in fields.items() if not k.isupper()}
    strategy = st.fixed_dictionaries(required, optional=optional)
    strategy.fields = (required, optional)  # type: ignore[attr-defined]  # read by the pair fuzz (test_fuzz_pairs.py)
    return strategy


# ---------------------------------------------------------------- the table

def _FUZZ_FACTORY(rope: Any, cfg: Any) -> Any:
    return posenc.Linear(2.0)


def _check_register_alibi(result: Any, kw: dict[str, Any]) -> None:
    """Registered: alibi_bias(..., convention=name) is the variant's own bias, bit for bit."""
    assert result is None
    variant = kw["variant"]() if isinstance(kw["variant"], type) else kw["variant"]
    assert np.array_equal(posenc.alibi_bias(3, 4, 2, offset=1, convention=kw["name"]),
                          posenc.alibi_bias(3, 4, 2, offset=1, convention=variant))


def _check_register(result: Any, kw: dict[str, Any]) -> None:
    """Registered: the name now means the object, for its kind."""
    assert result is None
    if kw["kind"] == "alibi":
        _check_register_alibi(result, {"name": kw["name"], "variant": kw["obj"]})
    else:
        _check_register_convention(result, {"name": kw["name"], "preset": kw["obj"]})


def _register_round_trip(rope_type: Any, factory: Any, replace: Any = False) -> Any:
    """posenc.register_scaling, then a config read through it, then the registry as it was (no fuzz name stays)."""
    from posenc.rope import registry

    reg = registry.SCALING_FACTORIES
    with reg._lock:  # the registry's dicts are replaced, never changed in place: holding them is a snapshot
        saved = (reg._items, reg._keys)
    try:
        posenc.register("scaling", rope_type, factory, replace=replace)
        if factory is _FUZZ_FACTORY:
            return posenc.from_hf_config({"head_dim": 8, "rope_parameters": {"rope_type": rope_type}})
        return None
    finally:
        with reg._lock:
            reg._items, reg._keys = saved


#: a RoPE spec (beside it the settings it holds must stay at their defaults; its head_dim must be x's), or none
_ROPE_SPEC = st.one_of(st.none(), st.sampled_from([posenc.RopeConfig(8, 4, 100.0, layout="interleaved"),
                                                   posenc.RopeConfig(16, scaling=posenc.Linear(2.0))]), junk)

#: a preset (by name or built), or none: beside it base and layout must stay at their defaults
_CONVENTION = st.one_of(st.none(), st.sampled_from([*conventions.NAMES, conventions.Fairseq(padding_idx=0),
                                                    conventions.Vaswani(base=100.0, layout="split")]), junk)
_ENC = dict(base=bases(), layout=layouts(("interleaved", "split")), dtype=dtypes(), convention=_CONVENTION)
_ROPE = dict(base=bases(), rotary_dim=st.one_of(st.none(), d_models(32)),
             seq_len=st.one_of(st.none(), small_ints(1, 10**5), reals, junk),
             # multi-axis sections change what a position is: here only values that must be refused
             sections=st.one_of(st.none(), st.sampled_from([(0,), (1, -1), "qwen", 3, (2.5, 1), (10**400,)]), junk),
             section_layout=st.one_of(st.just("contiguous"), junk), ladder=st.one_of(st.just("shared"), junk))


def _scalings() -> st.SearchStrategy[Any]:
    """None, a scaling built from hostile fields (when it constructs), or something that is no scaling."""
    def build(cls: type, kw: dict[str, Any]) -> Any:
        try:
            return cls(**kw)
        except (PosEncError, TypeError):
            return None
    built = st.one_of(*(st.builds(build, st.just(c), a) for c, a in _SCALING_ARGS.items()))
    return st.one_of(st.none(), built, st.sampled_from(["yarn", 2.0, {"factor": 2}]), junk)


_FACTOR = st.one_of(st.floats(0.5, 64), st.sampled_from([1.0, 4.0, 8.0, 2.0**-52, 2.0**52]), reals, junk)
_LEN = st.one_of(small_ints(1, 1 << 17), st.sampled_from([0, 10**400, 2**53 + 1]), reals, junk)
_OPT_REAL = st.one_of(st.none(), st.floats(0, 4), reals)
_SCALING_ARGS: dict[type, st.SearchStrategy[dict[str, Any]]] = {
    posenc.Linear: _kw(FACTOR=_FACTOR),
    posenc.NTK: _kw(FACTOR=_FACTOR),
    posenc.DynamicNTK: _kw(FACTOR=_FACTOR, ORIGINAL_MAX=_LEN),
    posenc.YaRN: _kw(FACTOR=_FACTOR, ORIGINAL_MAX=_LEN, beta_fast=_FACTOR, beta_slow=_FACTOR, mscale=_OPT_REAL,
                     mscale_all_dim=_OPT_REAL, attention_factor=_OPT_REAL, truncate=st.one_of(st.booleans(), junk)),
    posenc.Llama3: _kw(FACTOR=_FACTOR, LOW_FREQ_FACTOR=_FACTOR, HIGH_FREQ_FACTOR=_FACTOR, ORIGINAL_MAX=_LEN),
    posenc.LongRoPE: _kw(SHORT_FACTOR=st.one_of(st.lists(_FACTOR, max_size=4), junk),
                         LONG_FACTOR=st.one_of(st.lists(_FACTOR, max_size=4), junk), ORIGINAL_MAX=_LEN,
                         attention_factor=_OPT_REAL, factor=st.one_of(st.none(), _FACTOR),
                         short_mscale=_OPT_REAL, long_mscale=_OPT_REAL),
}

_HF_KEYS = st.dictionaries(
    st.sampled_from(["rope_type", "type", "factor", "rope_theta", "original_max_position_embeddings", "beta_fast",
                     "mscale", "mscale_all_dim", "low_freq_factor", "high_freq_factor", "short_factor",
                     "long_factor", "attention_factor", "truncate", "partial_rotary_factor", "bogus", 3]),
    st.one_of(st.sampled_from(["linear", "dynamic", "yarn", "llama3", "longrope", "su", "default", ["linear"]]),
              _FACTOR, st.lists(_FACTOR, max_size=4), junk),
    max_size=6,
)
_HF = st.one_of(
    st.fixed_dictionaries({}, optional={
        "head_dim": d_models(256), "hidden_size": st.one_of(small_ints(1, 8192), reals),
        "num_attention_heads": st.one_of(small_ints(1, 64), reals), "rope_theta": bases(),
        "max_position_embeddings": _LEN, "partial_rotary_factor": st.one_of(st.floats(0, 1.5), reals),
        "rope_scaling": st.one_of(_HF_KEYS, junk), "rope_parameters": _HF_KEYS,
        "original_max_position_embeddings": _LEN,
    }),
    junk,
)

_FREQS = st.builds(lambda h: posenc.rope_frequencies(h), st.integers(1, 16).map(lambda k: 2 * k))
_X = st.sampled_from([np.float16, np.float32, np.float64, np.int32, np.complex64]).flatmap(
    lambda dt: st.tuples(st.integers(0, 3), st.integers(0, 5), st.integers(1, 9).map(lambda k: 2 * k)).map(
        lambda s: np.random.default_rng(sum(s)).standard_normal(s).astype(dt)))

_HEADS = st.one_of(small_ints(1, 8), st.sampled_from([0, -1, 2**40, 10**400, 2.0]), junk)
_ALIBI_CONV = st.one_of(st.sampled_from(["press", "bloom", "mpt"]), st.text(max_size=5), junk)
_XPOS = st.one_of(st.none(), st.builds(posenc.XPos, gamma=st.floats(0.01, 2), scale_base=st.floats(16, 4096)), junk)
_SIZES = st.one_of(st.lists(small_ints(0, 12), min_size=1, max_size=3),
                   st.lists(st.sampled_from([10**6, 2**40, 10**400, -1, 2.5]), min_size=1, max_size=3), junk)
_SECTIONS = st.one_of(st.lists(small_ints(1, 8), min_size=1, max_size=3).map(tuple),
                      st.sampled_from([(0,), (1, -1), "qwen", 3, (2.5, 1), (10**400,)]), junk)
_B_OR_JUNK = st.one_of(st.booleans(), junk)
_COUNT = st.one_of(small_ints(0, 6), lengths(), reals, junk)
_SIDE = st.one_of(small_ints(1, 5), lengths(), reals, junk)
_STEP = st.one_of(st.floats(0, 1e6), st.sampled_from([0.5, 2 / 3, 12.5, 2.0**60, -1.0]), reals, junk)
_SEGMENT = st.one_of(
    st.builds(posenc.Text, st.integers(0, 5)),
    st.builds(posenc.VisionGrid, st.integers(1, 3), st.integers(1, 3), st.integers(1, 3), st.floats(0, 100)),
    st.sampled_from([posenc.VisionGrid(10**6, 10**6, 10**6), posenc.VisionGrid(3, 1, 1, 2.0**52),
                     posenc.Text(2**31 - 1)]),
    small_ints(0, 3), junk,
)


def _grid_call(size: Any) -> Any:
    """grid(*sizes): the fuzz passes the sizes as one keyword, ``size`` (how grid's messages name them)."""
    return posenc.grid(*size) if isinstance(size, list) else posenc.grid(size)


CASES: dict[str, Case] = {
    "encode": Case(posenc.encode, _kw(POSITIONS=positions(), D_MODEL=d_models(), **_ENC), _check_encode),
    "table": Case(posenc.table, _kw(LENGTH=lengths(), D_MODEL=d_models(), start=st.one_of(
        small_ints(-(2**31), 2**31), st.sampled_from([2**53 - 3, -(2**53), 1.5]), junk), **_ENC), _check_table),
    "frequencies": Case(posenc.frequencies, _kw(D_MODEL=d_models(), base=bases()), _check_frequencies),
    "wavelengths": Case(posenc.wavelengths, _kw(D_MODEL=d_models(), base=bases()), _check_wavelengths),
    "max_wavelength": Case(posenc.max_wavelength, _kw(D_MODEL=d_models(), base=bases()), _check_max_wavelength),
    "min_base": Case(posenc.min_base, _kw(CONTEXT=reals, D_MODEL=d_models()), _check_min_base),
    "context_report": Case(posenc.context_report, _kw(CONTEXT=reals, D_MODEL=d_models(), base=bases()),
                           _check_context_report),
    "shift_matrix": Case(posenc.shift_matrix, _kw(K=positions(), D_MODEL=d_models(), base=bases(),
                                                  layout=layouts(("interleaved", "split")), dtype=dtypes()),
                         _check_shift_matrix),
    "shift": Case(posenc.shift, _kw(ENCODING=st.one_of(_X, positions()), K=positions(), base=bases(),
                                    layout=layouts(("interleaved", "split"))), _check_shift),
    "similarity": Case(posenc.similarity, _kw(P=positions(), Q=positions(), D_MODEL=d_models(), base=bases(),
                                              per_channel=st.booleans()), _check_similarity),
    "aliasing": Case(posenc.aliasing, _kw(P=positions(), Q=positions(), D_MODEL=d_models(), base=bases(),
                                          layout=layouts(("interleaved", "split")), atol=reals), _check_aliasing),
    "min_separation": Case(posenc.min_separation, _kw(
        N=st.one_of(small_ints(2, 300), st.sampled_from([1, 0, -5, 2**40, 2**53, 2**60, 10**400, 2.5]), junk),
        D_MODEL=d_models(16), base=bases()), _check_min_separation),
    "rope_frequencies": Case(posenc.rope_frequencies, _kw(HEAD_DIM=d_models(), scaling=_scalings(), **_ROPE),
                             _check_freqs),
    "rope_cos_sin": Case(posenc.rope_cos_sin, _kw(POSITIONS=positions(), HEAD_DIM=d_models(32), scaling=_scalings(),
                                                  dtype=dtypes(), **_ROPE), _check_rope_cos_sin),
    "rope_table": Case(posenc.rope_table, _kw(FREQS=st.one_of(_FREQS, junk), START=st.one_of(
        small_ints(-(2**31), 2**31), st.sampled_from([2**53 - 2, 1.5])), LENGTH=lengths(), dtype=dtypes()),
        _check_rope_table),
    "apply_rope": Case(posenc.apply_rope, _kw(X=st.one_of(_X, positions()), POSITIONS=positions(),
                                              scaling=_scalings(), layout=layouts(("half", "interleaved")),
                                              xpos=_XPOS, role=st.one_of(st.sampled_from(["q", "k"]), junk),
                                              spec=_ROPE_SPEC, **_ROPE), _check_apply_rope),
    "rope_context_report": Case(posenc.rope_context_report, _kw(
        CONTEXT=reals, HEAD_DIM=d_models(32), scaling=_scalings(), base=bases(),
        rotary_dim=st.one_of(st.none(), d_models(32)), seq_len=st.one_of(st.none(), small_ints(1, 10**5), reals, junk)),
        _check_rope_context),
    "qk_permutation": Case(posenc.qk_permutation, _kw(
        HEAD_DIM=d_models(16), N_HEADS=st.one_of(small_ints(1, 8), st.sampled_from([0, 10**12, 10**400]), junk),
        FROM_LAYOUT=layouts(("half", "interleaved")), TO_LAYOUT=layouts(("half", "interleaved")),
        rotary_dim=st.one_of(st.none(), d_models(16))), _check_permutation),
    "permute_qk_weights": Case(posenc.permute_qk_weights, _kw(
        W=st.one_of(_X.map(lambda a: a.reshape(-1, a.shape[-1]) if a.ndim > 1 else a), positions()),
        N_HEADS=st.one_of(small_ints(1, 4), st.sampled_from([0, 10**400]), junk),
        FROM_LAYOUT=layouts(("half", "interleaved")), TO_LAYOUT=layouts(("half", "interleaved")),
        rotary_dim=st.one_of(st.none(), d_models(16))), _check_permute_weights),
    "from_hf_config": Case(posenc.from_hf_config, _kw(CONFIG=_HF, layer=st.one_of(small_ints(0, 3), junk)),
                           _check_hf),
    **{cls.__name__: Case(cls, args, _check_scaling) for cls, args in _SCALING_ARGS.items()},
    "alibi_slopes": Case(posenc.alibi_slopes, _kw(N_HEADS=_HEADS, convention=_ALIBI_CONV), _check_alibi_slopes),
    "alibi_bias": Case(posenc.alibi_bias, _kw(
        Q_LEN=st.one_of(small_ints(1, 6), lengths()), K_LEN=st.one_of(small_ints(1, 6), lengths()), N_HEADS=_HEADS,
        offset=st.one_of(small_ints(-3, 6), st.sampled_from([2**53, 10**400]), junk), positions=positions(),
        convention=_ALIBI_CONV, causal=_B_OR_JUNK, dtype=dtypes()), _check_alibi_bias),
    "t5_bucket": Case(posenc.t5_bucket, _kw(
        RELATIVE_POSITION=positions(), bidirectional=_B_OR_JUNK,
        num_buckets=st.one_of(small_ints(2, 64), st.sampled_from([0, 1, 3, 10**400]), junk),
        max_distance=st.one_of(small_ints(1, 1000), st.sampled_from([0, 2**53, 10**400, 1.5]), junk),
        spec=st.one_of(st.none(), st.sampled_from([T5Buckets(False, 16, 64), T5Buckets()]), junk)),
        _check_t5_bucket),
    "t5_bias": Case(posenc.t5_bias, _kw(
        WEIGHTS=st.one_of(st.sampled_from([np.arange(64.0).reshape(32, 2), np.ones((8, 3), np.float32),
                                           np.ones((3, 2)), np.ones(4), np.ones((4, 2), np.int64)]), junk),
        Q_LEN=st.one_of(small_ints(1, 5), lengths()), K_LEN=st.one_of(small_ints(1, 5), lengths()),
        offset=st.one_of(small_ints(-3, 6), st.sampled_from([2**53, 10**400]), junk),
        q_positions=st.one_of(st.none(), positions()), k_positions=st.one_of(st.none(), positions()),
        bidirectional=_B_OR_JUNK,
        max_distance=st.one_of(small_ints(1, 1000), st.sampled_from([0, 2**53, 10**400, 1.5]), junk)),
        _check_t5_bias),
    "t5_bucket_edges": Case(posenc.t5_bucket_edges, _kw(
        bidirectional=_B_OR_JUNK, num_buckets=st.one_of(small_ints(2, 64), st.sampled_from([0, 1, 3, 2**40]), junk),
        max_distance=st.one_of(small_ints(1, 1000), st.sampled_from([0, 2**53, 10**400]), junk)), _check_t5_edges),
    "xpos_decay": Case(posenc.xpos_decay, _kw(OFFSETS=positions(), ROTARY_DIM=d_models(32), xpos=_XPOS),
                       _check_xpos_decay),
    "xpos_scale": Case(posenc.xpos_scale, _kw(
        POSITIONS=positions(), ROTARY_DIM=d_models(32), xpos=_XPOS, role=st.one_of(st.sampled_from(["q", "k"]), junk),
        seq_len=st.one_of(st.none(), small_ints(1, 10**5), reals, junk), dtype=dtypes()), _check_xpos_scale),
    "XPos": Case(posenc.XPos, _kw(gamma=reals, scale_base=reals, center=_B_OR_JUNK), _check_xpos),
    "grid": Case(_grid_call, _kw(SIZE=_SIZES), _check_grid),
    "encode_nd": Case(posenc.encode_nd, _kw(
        COORDS=positions(), D_MODEL=d_models(), base=bases(), dtype=dtypes(),
        convention=st.one_of(st.none(), st.sampled_from(posenc.conventions_nd.NAMES), junk),
        cls_token=st.one_of(st.booleans(), small_ints(0, 3), junk)), _check_encode_nd),
    "grid_report": Case(posenc.grid_report, _kw(
        SIZES=_SIZES, D_MODEL=d_models(), base=bases(),
        convention=st.one_of(st.none(), st.sampled_from(posenc.conventions_nd.NAMES), junk)), _check_grid_report),
    "grid_similarity": Case(posenc.grid_similarity, _kw(
        SIZES=_SIZES, D_MODEL=d_models(), PATCH=st.one_of(st.lists(small_ints(0, 3), max_size=3), junk), base=bases(),
        convention=st.one_of(st.none(), st.sampled_from(posenc.conventions_nd.NAMES), junk)), _check_grid_similarity),
    "rope_grid_report": Case(posenc.rope_grid_report, _kw(
        SIZES=_SIZES, HEAD_DIM=d_models(), SECTIONS=_SECTIONS, base=bases(), scaling=_scalings(),
        section_layout=st.one_of(st.sampled_from(["contiguous", "interleaved"]), junk),
        ladder=st.one_of(st.sampled_from(["shared", "per_axis"]), junk), layout=layouts(("half", "interleaved")),
        rotary_dim=st.one_of(st.none(), d_models(16))), _check_grid_report),
    "Text": Case(posenc.Text, _kw(N=_COUNT), _check_mrope_text),
    "VisionGrid": Case(posenc.VisionGrid, _kw(T=_SIDE, H=_SIDE, W=_SIDE, time_step=_STEP), _check_vision_grid),
    "VisionGrid.from_processor": Case(posenc.VisionGrid.from_processor, _kw(
        GRID_THW=st.one_of(st.lists(st.one_of(small_ints(1, 12), reals), max_size=4), positions(), junk),
        spatial_merge_size=st.one_of(small_ints(1, 4), lengths(), junk), tokens_per_second=_STEP,
        second_per_grid=_STEP), _check_from_processor),
    "mrope_positions": Case(posenc.mrope_positions, _kw(
        SEGMENTS=st.one_of(st.lists(_SEGMENT, max_size=4), st.tuples(_SEGMENT), junk),
        advance=st.one_of(st.sampled_from(posenc.MROPE_ADVANCES), st.text(max_size=4), junk)), _check_mrope_positions),
    "mrope_decode_positions": Case(posenc.mrope_decode_positions, _kw(
        ROPE_DELTA=st.one_of(small_ints(-50, 50), positions(), junk),
        START=st.one_of(small_ints(0, 99), positions(), junk), count=_COUNT), _check_mrope_decode),
    "Sections": Case(posenc.Sections, _kw(
        SIZES=_SECTIONS, layout=st.one_of(st.sampled_from(["contiguous", "interleaved"]), junk),
        ladder=st.one_of(st.sampled_from(["shared", "per_axis"]), junk)), _check_sections,
        names=("sections", "section_layout")),
    **{f"conventions_nd.{c.__name__}": Case(c, args, lambda obj, kw: _check_encode_nd(
        posenc.encode_nd([[0, 1], [3, 2]], 8, convention=obj, dtype=np.float64), {"coords": [[0, 1], [3, 2]],
                                                                                  "d_model": 8, "dtype": np.float64}))
       for c, args in ((posenc.conventions_nd.Axial, _kw(base=bases())), (posenc.conventions_nd.MAE, _kw(base=bases())),
                       (posenc.conventions_nd.BigVision, _kw(temperature=bases())),
                       (posenc.conventions_nd.Timm, _kw(temperature=bases(), reverse_coord=_B_OR_JUNK,
                                                        interleave_sin_cos=_B_OR_JUNK)))},
    "conventions.get": Case(conventions.get, _kw(CONVENTION=st.one_of(st.sampled_from(conventions.NAMES), junk,
                                                                     st.text(max_size=8))), _check_get),
    "conventions.Vaswani": Case(conventions.Vaswani, _kw(base=bases(), layout=layouts(("interleaved", "split"))),
                                _check_convention),
    "conventions.Tensor2Tensor": Case(conventions.Tensor2Tensor, _kw(
        min_timescale=st.one_of(st.floats(0.1, 10), reals), max_timescale=st.one_of(st.floats(1, 1e5), reals),
        start_index=st.one_of(small_ints(-100, 100), reals)), _check_convention),
    "conventions.Fairseq": Case(conventions.Fairseq, _kw(padding_idx=st.one_of(small_ints(0, 5), reals, junk)),
                                _check_convention),
    "conventions.Keras": Case(conventions.Keras, _kw(max_wavelength=bases()), _check_convention),
    # a fresh name each draw (uuid) or a hostile one; a name drawn twice is refused, naming it
    "register_convention": Case(posenc.conventions.register_convention, _kw(
        NAME=st.one_of(st.uuids().map(lambda u: f"fuzz-{u}"), st.sampled_from(["", " x", "keras"]), junk),
        PRESET=st.one_of(st.sampled_from([conventions.Keras(max_wavelength=100.0), conventions.Vaswani,
                                          conventions.Fairseq]), junk)), _check_register_convention),
    "register_alibi": Case(posenc.bias.register_alibi, _kw(
        NAME=st.one_of(st.uuids().map(lambda u: f"fuzz-{u}"), st.sampled_from(["", " x", "press"]), junk),
        VARIANT=st.one_of(st.sampled_from([Mpt(alibi_bias_max=4.0), Bloom, Press()]), junk)),
        _check_register_alibi),
    # the one door to every registry: a kind (or junk) and what that kind takes (or junk)
    "register": Case(posenc.register, _kw(
        KIND=st.one_of(st.sampled_from(["sinusoid", "alibi"]), st.sampled_from(["bias", "", "Alibi"]), junk),
        NAME=st.one_of(st.uuids().map(lambda u: f"fuzz-{u}"), st.sampled_from(["", " x", "press", "keras"]), junk),
        OBJ=st.one_of(st.sampled_from([Mpt(alibi_bias_max=4.0), conventions.Keras(max_wavelength=100.0)]), junk),
        replace=st.one_of(st.booleans(), junk)), lambda out, kw: _check_register(out, kw)),
    "register_scaling": Case(_register_round_trip, _kw(
        ROPE_TYPE=st.one_of(st.just("fuzz_registered"), junk), FACTORY=st.one_of(st.just(_FUZZ_FACTORY), junk),
        replace=st.one_of(st.booleans(), junk)), lambda out, kw: _check_registered(out, kw),
        names=("rope_type", "factory", "replace")),
    "timestep_embedding": Case(posenc.timestep_embedding, _kw(
        T=positions(), DIM=d_models(), dtype=dtypes(),
        convention=st.one_of(st.sampled_from(sorted(TIMESTEP_FORMULAS)), st.text(max_size=5), junk)),
        check_timestep_embedding),
    "nerf_encoding": Case(posenc.nerf_encoding, _kw(
        X=st.one_of(positions(), _X), N_FREQS=st.one_of(small_ints(0, 12), st.sampled_from([-1, 53, 54, 10**400]),
                                                         reals, junk),
        convention=st.one_of(st.sampled_from(sorted(FIELD_FORMULAS)), st.text(max_size=5), junk),
        include_input=st.one_of(st.none(), st.booleans(), junk), dtype=dtypes()), check_nerf_encoding),
    "fourier_features": Case(posenc.fourier_features, _kw(
        X=st.one_of(positions(), _X), B=st.one_of(_X.map(lambda a: a.reshape(-1, a.shape[-1]) if a.ndim > 1 else a),
                                                  positions(), junk), dtype=dtypes()), check_fourier_features),
    "rope_preset": Case(posenc.rope_preset, _kw(
        NAME=st.one_of(st.sampled_from(sorted(ROPE_PRESET_SECTIONS)), st.text(max_size=5), junk),
        head_dim=st.one_of(d_models(256), small_ints(1, 300)), base=bases()), check_rope_preset),
    "eva02_coords": Case(posenc.eva02_coords, _kw(
        FEAT_SHAPE=st.one_of(st.lists(small_ints(1, 6), min_size=1, max_size=3), junk),
        ref_feat_shape=st.one_of(st.none(), st.lists(small_ints(1, 32), min_size=1, max_size=3), junk)),
        check_eva02_coords),
    "dinov3_coords": Case(posenc.dinov3_coords, _kw(H=st.one_of(small_ints(1, 9), lengths(), junk),
                                                   W=st.one_of(small_ints(1, 9), lengths(), junk)),
                          check_dinov3_coords),
}

def _check_registered(out: Any, kw: dict[str, Any]) -> None:
    if kw["factory"] is _FUZZ_FACTORY:
        assert out is not None and out.scaling == posenc.Linear(2.0)  # the registered factory is what reads it


#: Public names that are results or data, not things to call with hostile input.
NOT_CALLED = {"Aliasing", "ContextReport", "RopeConfig", "RopeContextReport", "RopeFrequencies", "Separation",
              "conventions", "CHANNEL_LAYOUTS", "ROPE_LAYOUTS", "PosEncError", "__version__", "ALIBI_CONVENTIONS",
              "AxisLadder", "GridReport", "conventions_nd", "MROPE_ADVANCES"}


#: calls judged in this process, by outcome: how many combinations the fuzz drew (issue 18's closing note)
OUTCOMES: Counter[str] = Counter()


def judge(case: Case, kw: dict[str, Any]) -> None:
    """Call ``case`` with ``kw``: a result that passes its check, or a PosEncError naming an argument."""
    try:
        result = case.call(**kw)
    except PosEncError as exc:
        OUTCOMES["refused"] += 1
        message = str(exc)
        assert "\n" not in message.strip() or len(message) < 2000
        assert names_the_value(message, [*kw.keys(), *case.names], kw.values()), (message, kw)
        return
    OUTCOMES["accepted"] += 1
    case.check(result, kw)


def drawn(strategy: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    """``strategy`` behind a short repr: hypothesis notes the top-level strategy's repr on a rejected draw
    (a float16 array's value out of range), and a table's repr passes 30 kB, which warns (an error here)."""
    return st.just(None).flatmap(lambda _: strategy)


@pytest.mark.parametrize("name", sorted(CASES))
def test_hostile_arguments(name):
    case = CASES[name]

    @given(drawn(case.args))
    def attempt(kw: dict[str, Any]) -> None:
        judge(case, kw)

    attempt()


def test_every_public_callable_is_fuzzed():
    public = {n for n in posenc.__all__ if n not in NOT_CALLED}
    assert public <= set(CASES), sorted(public - set(CASES))
    presets = {f"conventions.{c.__name__}" for c in vars(conventions).values()
               if inspect.isclass(c) and issubclass(c, conventions.Convention) and c is not conventions.Convention
               and dataclasses.fields(c)}  # presets without fields take no input to fuzz
    assert presets <= set(CASES), sorted(presets - set(CASES))

"""M-RoPE position ids: the (t, h, w) positions of a prompt mixing text, images and videos, and of decoded tokens.

Qwen2-VL, Qwen2.5-VL and Qwen3-VL give every token three positions (t, h, w)
(the rotation itself: :mod:`~posenc.rope.sections`). A prompt is a list of
segments, numbered left to right from a cursor c that starts at 0 (facts
from transformers 5.23, ``get_rope_index`` and ``get_vision_position_ids``
of ``Qwen2VLModel`` in ``models/qwen2_vl/modeling_qwen2_vl.py``,
``Qwen2_5_VLModel`` in ``qwen2_5_vl/`` and ``Qwen3VLModel`` in ``qwen3_vl/``):

- :class:`Text` ``(n)``: positions c, c + 1, …, c + n − 1 on every axis;
  then c += n.
- :class:`VisionGrid` ``(t, h, w, time_step)``: the image or video grid *as
  the language model sees it*, the processor's ``grid_thw`` with h and w
  divided by ``spatial_merge_size`` (:meth:`VisionGrid.from_processor`).
  Its t·h·w tokens, in C order over (t, h, w), sit at
  (c + τ(i), c + j, c + k), τ(i) = ⌊i·time_step⌋ as transformers evaluates
  it (below). ``time_step`` is 1 for Qwen2-VL and Qwen3-VL and for every
  image; Qwen2.5-VL videos use ``tokens_per_second · second_per_grid_t``
  (``get_rope_index``: ``time_interval``).
- after a grid the cursor moves on, by the rule ``advance``:

  - ``"max"`` (default): c = the largest position so far + 1, the rule the
    models were released with: transformers 4.x to 5.2 ``get_rope_index``
    (``st_idx = llm_pos_ids_list[-1].max() + 1``; the Qwen2.5-VL example of
    PR #35569: video t ids 0, 50, 100, then text from 101; issue #45381
    shows 5.2.0 continuing a video's text at its last t + 1).
  - ``"spatial"``: c += max(h, w), ignoring the temporal extent: transformers
    >= 5.3 (``current_pos += max(grid_thw[1], grid_thw[2]) //
    spatial_merge_size``; checked against 5.23).

  The two agree for every image (t = 1), for Qwen3-VL (its processor splits
  a video into one t = 1 grid per frame, each after its timestamp text) and
  for any grid with τ(t − 1) < max(h, w); they differ for a
  Qwen2-VL/Qwen2.5-VL video whose temporal extent is the larger.

``rope_delta`` = (largest position + 1) − (number of tokens): a decoded token
at cache position c (the prompt's tokens are 0 … s − 1, so the first
decoded one is at s) has position c + rope_delta on every axis
(:func:`mrope_decode_positions`; transformers ``compute_3d_position_ids``,
a forward on a cache without position ids). transformers' ``generate``
instead continues each axis from the prompt's last position + 1
(``_update_model_kwargs_for_generation``); the two agree when the last
token holds the largest position, as it does under ``advance="max"`` for a
prompt that ends in text (under ``"spatial"``, after a long video, they
part). With left padding, c counts the row's real tokens only
(``attention_mask.cumsum(-1) − 1``), and each row has its own delta:
compute each row's positions alone.

Hugging Face's ``position_ids`` are ``[3, b, s]``; posenc's positions are
``[..., s, 3]``: ``np.moveaxis(position_ids, 0, -1)`` one way,
``np.moveaxis(positions, -1, 0)`` the other.

The temporal ids reproduce transformers' float32 arithmetic: τ(i) =
trunc(float32(float32(i) · float32(time_step))) (``get_vision_position_ids``:
``(torch.arange(t) * time_interval).long()``, float32 because
``second_per_grid_ts`` is a float32 tensor). That is what the models run
with, and not the exact floor of i·time_step: for a step that is no short
binary fraction (2/3 s per grid at 2 tokens per second, 1.3333333333333333)
the exact floor of the float gives 3 at i = 3, transformers 4 (3·4/3, the
intended value); at larger i float32 can as well land one below the
intended value (1 token per second, 2/41 s per grid: i = 41 gives 1).
:meth:`VisionGrid.from_processor` forms the step from ``tokens_per_second``
and ``second_per_grid`` as transformers does, float32(float32(tps) ·
float32(spg)). Every other position is an exact int64.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..errors import MAX_POSITION, PosEncError, check_int, check_real, shape_text, show_value
from ..support.arguments import set_fields
from ..support.memory import check_size, limit

__all__ = ["MROPE_ADVANCES", "Text", "VisionGrid", "mrope_decode_positions", "mrope_positions"]

#: How the cursor moves past a vision grid: ``"max"`` (the models' rule) or ``"spatial"`` (transformers >= 5.3).
MROPE_ADVANCES = ("max", "spatial")

#: The most tokens in one segment and the longest grid side: far beyond any prompt.
MAX_COUNT = 2**31 - 1

_F32_MAX = float(np.finfo(np.float32).max)  # the time step is a float32, as in transformers


@dataclass(frozen=True)
class Text:
    """``n`` text tokens: positions c … c + n − 1 on all three axes.

    >>> Text(3).tokens
    3
    """

    n: int  # tokens; 0 is allowed (a segment that adds nothing)

    def __post_init__(self) -> None:
        set_fields(self, n=check_int(self.n, "Text n", minimum=0, maximum=MAX_COUNT))

    @property
    def tokens(self) -> int:
        """Tokens in the prompt: ``n``."""
        return self.n


@dataclass(frozen=True)
class VisionGrid:
    """An image or video as the language model sees it: a t × h × w grid of tokens.

    h and w are counted *after* the spatial merge (the processor's
    ``grid_thw`` h and w divided by ``spatial_merge_size``, 2 in every Qwen
    VL model); :meth:`from_processor` does the division.

    >>> VisionGrid(2, 3, 4).tokens
    24
    >>> VisionGrid.from_processor((1, 28, 42), spatial_merge_size=2)
    VisionGrid(t=1, h=14, w=21, time_step=1.0)
    >>> VisionGrid.from_processor((4, 28, 28), tokens_per_second=2, second_per_grid=2 / 3).time_step
    1.3333333730697632
    """

    t: int  # temporal patches (frames / temporal_patch_size); 1 for an image
    h: int  # rows of merged patches
    w: int  # columns of merged patches
    time_step: float = 1.0  # t id step, used as float32: 1, or Qwen2.5-VL video tokens_per_second·second_per_grid_t

    def __post_init__(self) -> None:
        for axis in ("t", "h", "w"):
            value = check_int(getattr(self, axis), f"VisionGrid {axis}", minimum=1, maximum=MAX_COUNT)
            set_fields(self, **{axis: value})
        step = check_real(self.time_step, "time_step")
        if not 0 <= step <= _F32_MAX:  # frames must not go back in time, and the step is a float32
            raise PosEncError(f"time_step must be in [0, {_F32_MAX:.4g}] (a float32 >= 0), "
                              f"got {show_value(self.time_step)}")
        set_fields(self, time_step=float(np.float32(step)) + 0.0)  # the step transformers uses; -0 -> 0

    @classmethod
    def from_processor(cls, grid_thw: Sequence[int], spatial_merge_size: int = 2, *,
                       tokens_per_second: float | None = None, second_per_grid: float | None = None) -> VisionGrid:
        """The grid of a processor's ``grid_thw`` row (``image_grid_thw``/``video_grid_thw``), h and w merged.

        Args:
            grid_thw: (t, h, w) in vision patches, as the processor returns it
                (a torch row: ``row.tolist()``).
            spatial_merge_size: patches merged per side (``vision_config.spatial_merge_size``).
            tokens_per_second: a Qwen2.5-VL video: ``vision_config.tokens_per_second``;
                with ``second_per_grid``, the time step is their float32 product
                (transformers ``time_interval``). Leave both out for an image or
                a Qwen2-VL/Qwen3-VL video (step 1).
            second_per_grid: the video's ``second_per_grid_ts`` entry (temporal_patch_size / fps).
        """
        step = 1.0
        if (tokens_per_second is None) != (second_per_grid is None):
            raise PosEncError(f"tokens_per_second and second_per_grid go together, got tokens_per_second "
                              f"{show_value(tokens_per_second)} and second_per_grid {show_value(second_per_grid)}")
        if tokens_per_second is not None:
            tps = check_real(tokens_per_second, "tokens_per_second")
            spg = check_real(second_per_grid, "second_per_grid")
            if not (0 <= tps <= _F32_MAX and 0 <= spg <= _F32_MAX):
                raise PosEncError(f"tokens_per_second and second_per_grid must be float32 values >= 0, got "
                                  f"{show_value(tokens_per_second)} and {show_value(second_per_grid)}")
            with np.errstate(over="ignore"):  # an infinite product is refused by VisionGrid, naming time_step
                step = float(np.float32(tps) * np.float32(spg))
        merge = check_int(spatial_merge_size, "spatial_merge_size", minimum=1, maximum=MAX_COUNT)
        try:
            three = not isinstance(grid_thw, (str, bytes, dict)) and len(grid_thw) == 3
        except TypeError:  # no length: a number, a 0-d array
            three = False
        if not three:
            raise PosEncError(f"grid_thw must be (t, h, w), three integers, got {show_value(grid_thw)}")
        t, h, w = (check_int(v, f"grid_thw[{k}]", minimum=1) for k, v in enumerate(grid_thw))
        if h % merge or w % merge:  # the processor resizes images to multiples of the merge
            raise PosEncError(f"grid_thw h and w must be multiples of spatial_merge_size {merge}, "
                              f"got {show_value(grid_thw)}")
        return cls(t, h // merge, w // merge, step)

    @property
    def tokens(self) -> int:
        """Tokens in the prompt: t·h·w."""
        return self.t * self.h * self.w

    def extent(self) -> int:
        """The largest offset of a position from the grid's cursor: max(τ(t − 1), h − 1, w − 1)."""
        return max(int(_time_ids(self.t - 1, 1, self.time_step)[0]), self.h - 1, self.w - 1)


def _check_segments(segments: Any, advance: Any) -> tuple[list[Text | VisionGrid], list[int], int, int]:
    """(segments, each one's cursor, tokens in all, largest position), all checked before any work."""
    if not isinstance(advance, str) or advance not in MROPE_ADVANCES:
        raise PosEncError(f"advance must be one of {MROPE_ADVANCES}, got {show_value(advance)}")
    if not isinstance(segments, (list, tuple)):
        raise PosEncError(f"segments must be a list of Text and VisionGrid, got {show_value(segments)}")
    segs: list[Text | VisionGrid] = list(segments)
    starts, cursor, tokens, top = [], 0, 0, -1
    room = limit() // (3 * 8)  # rows of int64 [s, 3] that fit: refused at the segment that passes it, not after all
    for k, seg in enumerate(segs):
        if not isinstance(seg, (Text, VisionGrid)):
            raise PosEncError(f"segments[{k}] must be a Text or a VisionGrid, got {show_value(seg)}")
        starts.append(cursor)
        tokens += seg.tokens
        if isinstance(seg, Text):
            top = max(top, cursor + seg.n - 1) if seg.n else top
            cursor += seg.n
        else:
            top = max(top, cursor + seg.extent())
            cursor = top + 1 if advance == "max" else cursor + max(seg.h, seg.w)
        if top >= MAX_POSITION:  # float64 holds every integer below 2**53: beyond, a position would mean another
            raise PosEncError(f"segments reach position {top} at segments[{k}], past 2**53 − 1 (positions "
                              f"must be exact in float64); got {show_value(seg)}")
        if tokens > room:
            check_size((tokens, 3), np.int64, f"M-RoPE positions of segments[0 … {k}]")
    if tokens == 0:
        raise PosEncError(f"segments must hold at least one token, got {show_value(segments)}")
    check_size((tokens, 3), np.int64, "M-RoPE positions of these segments")
    return segs, starts, tokens, top


def mrope_positions(segments: Sequence[Text | VisionGrid], *, advance: str = "max") -> tuple[np.ndarray, int]:
    """The (t, h, w) positions of a multimodal prompt, and its rope delta.

    What transformers' ``get_rope_index`` computes for one row (module
    docstring for the rules and sources), from the segments instead of the
    token ids.

    Args:
        segments: the prompt left to right: :class:`Text` and
            :class:`VisionGrid` (the vision start/end tokens are text).
        advance: where the cursor goes after a grid: ``"max"`` (largest
            position + 1, the models' rule) or ``"spatial"`` (+ max(h, w),
            transformers >= 5.3); see the module docstring.

    Returns:
        ``(positions, rope_delta)``: positions int64 ``[s, 3]`` (s the
        tokens in all; columns t, h, w), and rope_delta = max(positions) + 1
        − s, an int (HF ``rope_deltas`` of this row).

    Raises:
        PosEncError: a segment that is neither, no tokens at all, a position
            past 2**53 − 1, or an output larger than memory.

    >>> pos, delta = mrope_positions([Text(2), VisionGrid(1, 2, 2), Text(1)])
    >>> pos.tolist()
    [[0, 0, 0], [1, 1, 1], [2, 2, 2], [2, 2, 3], [2, 3, 2], [2, 3, 3], [4, 4, 4]]
    >>> delta                                   # max 4, 7 tokens: 4 + 1 - 7
    -2
    >>> pos, _ = mrope_positions([VisionGrid(3, 1, 2, time_step=2.5), Text(1)])
    >>> pos[:, 0].tolist()                      # t: 0, 0, 2, 2, 5, 5, then text at 6
    [0, 0, 2, 2, 5, 5, 6]
    >>> mrope_positions([VisionGrid(3, 1, 2, time_step=2.5), Text(1)], advance="spatial")[0][-1].tolist()
    [2, 2, 2]
    """
    segs, starts, tokens, top = _check_segments(segments, advance)
    out = np.empty((tokens, 3), dtype=np.int64)
    row = 0
    for seg, c in zip(segs, starts, strict=True):
        if isinstance(seg, Text):
            out[row : row + seg.n] = np.arange(c, c + seg.n, dtype=np.int64)[:, None]
        else:
            block = out[row : row + seg.tokens].reshape(seg.t, seg.h, seg.w, 3)
            block[..., 0] = (c + _time_ids(0, seg.t, seg.time_step))[:, None, None]
            block[..., 1] = np.arange(c, c + seg.h, dtype=np.int64)[:, None]
            block[..., 2] = np.arange(c, c + seg.w, dtype=np.int64)
        row += seg.tokens
    return out, top + 1 - tokens


def _time_ids(first: int, count: int, step: float) -> np.ndarray:
    """τ(i) = trunc(float32(float32(i)·float32(step))) for i = first … first + count − 1, int64 ``[count]``.

    As transformers: an int64 arange times a float32 scalar is float32 (i
    rounded to float32, one rounding of the product), then ``.long()``.

    >>> _time_ids(0, 5, 2.5).tolist(), _time_ids(0, 4, 4 / 3).tolist()      # 3·float32(4/3) rounds to 4
    ([0, 2, 5, 7, 10], [0, 1, 2, 4])
    """
    i = np.arange(first, first + count, dtype=np.int64).astype(np.float32)
    with np.errstate(over="ignore"):  # a product past float32: the caller's 2**53 check refuses it
        tau = i * np.float32(step)
    return np.minimum(tau.astype(np.float64), 2.0**62).astype(np.int64)  # clamped: a cast of inf is undefined


def _int_array(value: Any, name: str) -> np.ndarray:
    """An integer scalar or array as int64, each |value| < 2**53; bools, floats and the rest refused."""
    if isinstance(value, (bool, np.bool_)):
        raise PosEncError(f"{name} must be an integer or an integer array, got {show_value(value)}")
    try:
        arr = np.asarray(value)
    except (ValueError, TypeError, OverflowError):  # ragged lists, hostile objects
        raise PosEncError(f"{name} must be an integer or an integer array, got {show_value(value)}") from None
    if arr.dtype.kind not in "iu":  # a float 3.0 would hide a computed, not counted, position
        raise PosEncError(f"{name} must be an integer or an integer array, got {show_value(value)} "
                          f"(dtype {arr.dtype})")
    if arr.size and (int(arr.max()) >= MAX_POSITION or int(arr.min()) <= -MAX_POSITION):
        raise PosEncError(f"{name} must lie within ±(2**53 − 1), got {show_value(value)}")
    return arr.astype(np.int64)


def mrope_decode_positions(rope_delta: Any, start: Any, count: int = 1) -> np.ndarray:
    """The (t, h, w) positions of ``count`` tokens decoded after a prompt: cache position + rope delta.

    Token j (j < count) sits at cache position start + j and gets
    start + j + rope_delta on all three axes (transformers
    ``compute_3d_position_ids``: ``position_ids + rope_deltas`` once the cache
    holds the prompt). ``rope_delta`` and ``start`` may be arrays, one value
    per row, broadcast together (HF's ``rope_deltas`` ``[b, 1]``: pass
    ``rope_deltas[:, 0]``).

    Args:
        rope_delta: the prompt's delta (:func:`mrope_positions`), int or int array.
        start: the cache position of the first token: the prompt's length
            (its real tokens only, with left padding), plus the tokens
            decoded since; int or int array.
        count: tokens to place (1 per step of greedy decoding).

    Returns:
        int64 ``[..., count, 3]``, ``...`` the broadcast shape of rope_delta and start.

    Raises:
        PosEncError: a non-integer, a negative first position (start below
            the prompt's length), a position past 2**53 − 1, or an output
            larger than memory.

    >>> pos, delta = mrope_positions([Text(2), VisionGrid(1, 2, 2), Text(1)])
    >>> mrope_decode_positions(delta, len(pos), 2).tolist()      # the two tokens after the 7-token prompt
    [[5, 5, 5], [6, 6, 6]]
    >>> mrope_decode_positions([-2, 0], 7).shape                  # two rows, one token each
    (2, 1, 3)
    """
    delta = _int_array(rope_delta, "rope_delta")
    first = _int_array(start, "start")
    n = check_int(count, "count", minimum=0, maximum=MAX_COUNT)
    try:
        shape = np.broadcast_shapes(delta.shape, first.shape)
    except ValueError:
        raise PosEncError(f"rope_delta {shape_text(delta.shape)} and start {shape_text(first.shape)} "
                          "do not broadcast") from None
    check_size((*shape, n, 3), np.int64, "M-RoPE positions for this rope_delta, start and count")
    if math.prod(shape) == 0 or n == 0:
        return np.empty((*shape, n, 3), dtype=np.int64)
    base = first + delta  # |each| < 2**53: no int64 overflow
    lo, hi = int(base.min()), int(base.max()) + n - 1
    if lo < 0:
        raise PosEncError(f"start + rope_delta must be >= 0 (start is the cache position of the first decoded "
                          f"token, at least the prompt's length), got start {show_value(start)} and rope_delta "
                          f"{show_value(rope_delta)}")
    if hi >= MAX_POSITION:
        raise PosEncError(f"start + rope_delta + count − 1 reaches {hi}, past 2**53 − 1; got start "
                          f"{show_value(start)}, rope_delta {show_value(rope_delta)}, count {show_value(count)}")
    steps = base[..., None] + np.arange(n, dtype=np.int64)  # [..., count]
    return np.repeat(steps[..., None], 3, axis=-1)

"""M-RoPE position ids of multimodal prompts (posenc.rope.multimodal), against transformers 5.23's own code.

The reference is transformers' ``get_rope_index`` (Qwen2VLModel, Qwen2_5_VLModel,
Qwen3VLModel) run on CPU on tiny configs built here (no weights downloaded):
input_ids made of the config's vision start / image / video / vision end
token ids, ``mm_token_type_ids`` as the processor derives them, the grids as
the processor returns them (before the spatial merge). Decoding is checked
against ``generate`` itself, the positions its text model receives step by
step. Elsewhere: a slow reference written from the rules (tests/reference.py).
"""

from __future__ import annotations

import math

import hypothesis.strategies as st
import numpy as np
import pytest
from hypothesis import given

import posenc
from posenc import PosEncError, Text, VisionGrid, mrope_decode_positions, mrope_positions
from reference import mrope_reference

IMG, VID, VS, VE, WORD, PAD = 60, 61, 62, 63, 5, 0  # token ids of the tiny configs
MERGE = 2


def _config(family, tokens_per_second=4):
    tr = pytest.importorskip("transformers")
    text = {"hidden_size": 16, "intermediate_size": 32, "num_hidden_layers": 1, "num_attention_heads": 2,
            "num_key_value_heads": 1, "vocab_size": 64, "bos_token_id": 0, "eos_token_id": 0, "pad_token_id": PAD,
            "rope_parameters": {"rope_type": "default", "rope_theta": 1e4, "mrope_section": [2, 1, 1]}}
    vision = {"depth": 1, "hidden_size": 16, "num_heads": 2, "patch_size": 2, "spatial_merge_size": MERGE,
              "temporal_patch_size": 2, "in_channels": 3}
    ids = {"image_token_id": IMG, "video_token_id": VID, "vision_start_token_id": VS, "vision_end_token_id": VE}
    if family == "qwen2_vl":
        return tr.Qwen2VLConfig(text_config=text, vision_config={**vision, "embed_dim": 16}, **ids)
    if family == "qwen2_5_vl":
        return tr.Qwen2_5_VLConfig(text_config=text, vision_config={
            **vision, "out_hidden_size": 16, "intermediate_size": 32, "tokens_per_second": tokens_per_second}, **ids)
    text["rope_parameters"]["mrope_interleaved"] = True
    return tr.Qwen3VLConfig(text_config=text, vision_config={
        **vision, "out_hidden_size": 16, "intermediate_size": 32, "deepstack_visual_indexes": []}, **ids)


def _model(family, **kw):
    import transformers as tr

    cls = {"qwen2_vl": tr.Qwen2VLModel, "qwen2_5_vl": tr.Qwen2_5_VLModel, "qwen3_vl": tr.Qwen3VLModel}[family]
    return cls(_config(family, **kw)).eval()


def _prompt(family, spec, tokens_per_second=4):
    """A prompt spec -> (token ids, processor grids, second_per_grid_ts, posenc segments).

    spec items: n (n text tokens), ("image", (t, h, w)), ("video", (t, h, w), seconds_per_grid); grids as the
    processor gives them. Every vision block is wrapped in vision start/end tokens (text); Qwen3-VL's processor
    splits a video into frames, each after its timestamp text (2 tokens here).
    """
    ids, images, videos, seconds, segs = [], [], [], [], []

    def text(n):
        ids.extend([WORD] * n)
        segs.append(Text(n))

    def vision(token, grid, **time):  # vision start and end are text tokens
        ids.extend([VS, *[token] * (math.prod(grid) // MERGE**2), VE])
        segs.extend([Text(1), VisionGrid.from_processor(grid, MERGE, **time), Text(1)])

    for item in spec:
        if isinstance(item, int):
            text(item)
        elif item[0] == "image":
            images.append(item[1])
            vision(IMG, item[1])
        elif family == "qwen3_vl":
            t, h, w = item[1]
            videos.append(item[1])
            for _ in range(t):
                text(2)
                vision(VID, (1, h, w))
        else:
            videos.append(item[1])
            seconds.append(item[2] if len(item) > 2 else 1.0)
            time = {"tokens_per_second": tokens_per_second, "second_per_grid": seconds[-1]}
            vision(VID, item[1], **(time if family == "qwen2_5_vl" else {}))
    return ids, images, videos, seconds, segs


def _hf_index(family, specs, tokens_per_second=4):
    """transformers' get_rope_index on the rows (left-padded to one length): per row (positions [s, 3], delta)."""
    import torch

    rows = [_prompt(family, spec, tokens_per_second) for spec in specs]
    width = max(len(r[0]) for r in rows)
    ids = torch.tensor([[PAD] * (width - len(r[0])) + r[0] for r in rows])
    mask = torch.tensor([[0] * (width - len(r[0])) + [1] * len(r[0]) for r in rows])
    kw = {"mm_token_type_ids": (ids == IMG).int() + 2 * (ids == VID).int(),
          "attention_mask": mask if len(rows) > 1 else None}
    images = [g for r in rows for g in r[1]]
    videos = [g for r in rows for g in r[2]]
    if images:
        kw["image_grid_thw"] = torch.tensor(images)
    if videos:
        kw["video_grid_thw"] = torch.tensor(videos)
    if family == "qwen2_5_vl" and videos:
        kw["second_per_grid_ts"] = torch.tensor([s for r in rows for s in r[3]])
    model = _model(family, tokens_per_second=tokens_per_second) if family == "qwen2_5_vl" else _model(family)
    with torch.no_grad():
        pos, deltas = model.get_rope_index(ids, **kw)
    out = []
    for b, r in enumerate(rows):
        got = pos[:, b, width - len(r[0]):].T.numpy()  # the documented conversion: HF [3, b, s] -> [s, 3]
        assert (pos[:, b, : width - len(r[0])] == 0).all()  # HF leaves the padding at 0
        out.append((got, int(deltas[b, 0]), r[4]))
    return out


LAYOUTS = {
    "text only": [7],
    "text image text": [3, ("image", (1, 8, 12)), 4],
    "two images": [2, ("image", (1, 4, 4)), 3, ("image", (1, 12, 6)), 1],
    "image at the start and end": [("image", (1, 6, 4)), 2, ("image", (1, 4, 10))],
    "video, space dominates": [2, ("video", (2, 8, 8)), 3],
    "image and video": [1, ("image", (1, 4, 8)), ("video", (3, 8, 4)), 2],
}


@pytest.mark.parametrize("family", ["qwen2_vl", "qwen2_5_vl", "qwen3_vl"])
@pytest.mark.parametrize("layout", sorted(LAYOUTS))
def test_positions_and_delta_equal_get_rope_index(family, layout):
    for got, delta, segs in _hf_index(family, [LAYOUTS[layout]], tokens_per_second=1):
        for advance in posenc.MROPE_ADVANCES:  # here the rules agree: no video outlasts its width
            pos, d = mrope_positions(segs, advance=advance)
            assert pos.dtype == np.int64 and pos.shape == got.shape
            np.testing.assert_array_equal(pos, got)
            assert d == delta


def test_left_padded_batch_rows_are_each_prompt_alone():
    specs = [[1, ("image", (1, 4, 4)), 2], [5, ("image", (1, 8, 4)), 3, ("image", (1, 4, 4)), 6], [9]]
    for got, delta, segs in _hf_index("qwen2_vl", specs):
        pos, d = mrope_positions(segs)
        np.testing.assert_array_equal(pos, got)
        assert d == delta


@pytest.mark.parametrize("grid", [(4, 4, 4), (6, 2, 4), (3, 2, 2)])
def test_a_long_video_is_where_transformers_5_moved_the_text(grid):
    """Qwen2-VL, a video whose t extent passes max(h, w): transformers 5.23 advances by max(h, w) only."""
    (got, delta, segs), = _hf_index("qwen2_vl", [[2, ("video", grid), 3]])
    spatial, d = mrope_positions(segs, advance="spatial")
    np.testing.assert_array_equal(spatial, got)
    assert d == delta
    ours, d_max = mrope_positions(segs)  # the models' rule: text continues after the last frame
    assert (ours.tolist(), d_max) == mrope_reference(segs, "max")
    video = ours[3:-4]  # 2 words and the start token before, the end token and 3 words after
    assert ours[-4, 0] == video.max() + 1 > got[-4, 0]  # HF 5.23 puts the end token inside the video's time
    assert got[-4, 0] <= video[:, 0].max()


@pytest.mark.parametrize("seconds", [[0.5], [1.0], [2.0], [1.5, 0.25], [2 / 3, 2 / 7], [2 / 41, 0.4, 2 / 30]])
@pytest.mark.parametrize("tokens_per_second", [1, 2, 4, 25, 41])
def test_qwen2_5_vl_video_time_steps(seconds, tokens_per_second):
    """second_per_grid_ts = temporal_patch_size / fps; long videos (t = 96) meet float32's rounding."""
    spec = [2] + [x for s in seconds for x in (("video", (96, 2, 4), s), 1)]
    for got, delta, segs in _hf_index("qwen2_5_vl", [spec], tokens_per_second):
        pos, d = mrope_positions(segs, advance="spatial")
        np.testing.assert_array_equal(pos, got)
        assert d == delta


def test_the_qwen2_5_vl_example_of_transformers_pr_35569():
    """PR #35569's docstring: t ids 0, 50, 100 (interval 50), h [0,0,1,1], w [0,1,0,1], text from 101."""
    pos, _ = mrope_positions([VisionGrid(3, 2, 2, time_step=25 * 2 / 1), Text(5)])
    assert pos[:12, 0].tolist() == [0] * 4 + [50] * 4 + [100] * 4
    assert pos[:12, 1].tolist() == [0, 0, 1, 1] * 3 and pos[:12, 2].tolist() == [0, 1, 0, 1] * 3
    assert pos[12:, 0].tolist() == [101, 102, 103, 104, 105]


GENERATE = {  # layouts where both rules agree (no video outlasts its width)
    "qwen2_vl": [[1, ("image", (1, 4, 4)), 2], [3, ("image", (1, 8, 4)), 1, ("image", (1, 4, 4)), 2]],
    "qwen2_5_vl": [[1, ("video", (2, 8, 8), 0.5), 2], [3, ("image", (1, 8, 4)), 2]],
    "qwen3_vl": [[2, ("video", (2, 4, 4)), 1], [1, ("image", (1, 4, 8)), 3]],
}


def _generate(family, specs, steps):
    """generate, left-padded: (prompts, width, the (t, h, w) positions the text model saw per forward [3, b, s])."""
    torch = pytest.importorskip("torch")
    import transformers as tr

    rows = [_prompt(family, s) for s in specs]
    width = max(len(r[0]) for r in rows)
    ids = torch.tensor([[PAD] * (width - len(r[0])) + r[0] for r in rows])
    kw = {"attention_mask": (torch.arange(width)[None] >= torch.tensor([[width - len(r[0])] for r in rows])).long(),
          "mm_token_type_ids": (ids == IMG).int() + 2 * (ids == VID).int()}
    for key, pixels, k in (("image_grid_thw", "pixel_values", 1), ("video_grid_thw", "pixel_values_videos", 2)):
        grids = [g for r in rows for g in r[k]]
        if grids:
            kw[key] = torch.tensor(grids)
            kw[pixels] = torch.randn(int(kw[key].prod(-1).sum()), 3 * 2 * 2 * 2)  # c·temporal·patch²
    if family == "qwen2_5_vl":
        kw["second_per_grid_ts"] = torch.tensor([s for r in rows for s in r[3]])
    torch.manual_seed(0)
    cls = {"qwen2_vl": tr.Qwen2VLForConditionalGeneration, "qwen2_5_vl": tr.Qwen2_5_VLForConditionalGeneration,
           "qwen3_vl": tr.Qwen3VLForConditionalGeneration}[family]
    model = cls(_config(family)).eval()
    seen = []
    model.model.language_model.rotary_emb.register_forward_hook(lambda m, a, o: seen.append(a[1][-3:].numpy()))
    model.generate(input_ids=ids, max_new_tokens=steps, min_new_tokens=steps, do_sample=False, **kw)
    assert len(seen) == steps
    return rows, width, seen


@pytest.mark.parametrize("family", sorted(GENERATE))
def test_decode_positions_equal_generate(family):
    """The text model's positions at prefill and at every decoded step; each row its own prompt and delta."""
    steps = 4
    rows, width, seen = _generate(family, GENERATE[family], steps)
    for b, r in enumerate(rows):
        pos, delta = mrope_positions(r[4])
        np.testing.assert_array_equal(seen[0][:, b, width - len(r[0]):].T, pos)
        decoded = np.stack([s[:, b, 0] for s in seen[1:]])  # [steps − 1, 3]
        # the token decoded at step j sits at cache position len(prompt) + j − 1 (its real tokens only)
        np.testing.assert_array_equal(decoded, mrope_decode_positions(delta, len(r[0]), steps - 1))
    deltas = np.array([mrope_positions(r[4])[1] for r in rows])
    both = mrope_decode_positions(deltas, [len(r[0]) for r in rows], 1)
    np.testing.assert_array_equal(both[:, 0], seen[1][:, :, 0].T)


def test_transformers_5_generate_and_its_rope_deltas_part_on_a_long_video():
    """Qwen2.5-VL, a video whose time outlasts its width. transformers 5.23 lays the prompt out by the spatial
    rule; generate then decodes from the last position + 1, while rope_deltas (a forward with a cache) say
    max + 1. Under the models' rule ("max") the last text token holds the maximum and the two coincide."""
    steps = 3
    rows, _, seen = _generate("qwen2_5_vl", [[1, ("video", (4, 4, 4), 0.5), 2]], steps)
    segs = rows[0][4]
    spatial, delta = mrope_positions(segs, advance="spatial")
    np.testing.assert_array_equal(seen[0][:, 0].T, spatial)
    decoded = np.stack([s[:, 0, 0] for s in seen[1:]])
    np.testing.assert_array_equal(decoded, spatial[-1] + 1 + np.arange(steps - 1)[:, None])
    assert (mrope_decode_positions(delta, len(spatial), steps - 1) > decoded).all()
    ours, d = mrope_positions(segs)
    assert (ours[-1] == ours.max()).all()
    np.testing.assert_array_equal(mrope_decode_positions(d, len(ours), 2), ours[-1] + 1 + np.arange(2)[:, None])


# --- properties -------------------------------------------------------------------------

_STEPS = st.one_of(st.sampled_from([0.0, 1.0, 0.5, 2.5, 12.5, 0.1, 2 / 3]), st.floats(0, 1e6))
_SEGMENT = st.one_of(st.builds(Text, st.integers(0, 6)),
                     st.builds(VisionGrid, st.integers(1, 4), st.integers(1, 4), st.integers(1, 4), _STEPS))
_SEGMENTS = st.lists(_SEGMENT, min_size=1, max_size=6).filter(lambda s: sum(x.tokens for x in s) > 0)


@given(_SEGMENTS, st.sampled_from(["max", "spatial"]))
def test_positions_follow_the_rules(segs, advance):
    pos, delta = mrope_positions(segs, advance=advance)
    rows, d = mrope_reference(segs, advance)
    assert pos.dtype == np.int64 and pos.tolist() == rows and delta == d
    assert delta == int(pos.max()) + 1 - len(pos)


@given(_SEGMENTS)
def test_the_models_rule_continues_past_everything(segs):
    pos, delta = mrope_positions(segs)
    row = 0
    for seg in segs:
        block = pos[row : row + seg.tokens]
        if len(block) and row:
            assert block.min() == pos[:row].max() + 1  # each segment starts right after all before it
        row += seg.tokens
    nxt = mrope_decode_positions(delta, len(pos), 3)
    assert nxt.tolist() == [[int(pos.max()) + 1 + j] * 3 for j in range(3)]


@given(st.integers(0, 300), st.integers(0, 10**6))
def test_text_only_is_plain_positions(n, cached):
    pos, delta = mrope_positions([Text(n), Text(1)])
    assert np.array_equal(pos, np.repeat(np.arange(n + 1)[:, None], 3, axis=1)) and delta == 0
    assert np.array_equal(mrope_decode_positions(0, cached, 2), [[cached] * 3, [cached + 1] * 3])


@given(st.integers(1, 200), st.one_of(st.floats(0, 2**20, width=32), st.sampled_from([0.1, 4 / 3, 2 / 41, 2**-40])))
def test_temporal_ids_are_transformers_float32_products(t, step):
    torch = pytest.importorskip("torch")
    pos, _ = mrope_positions([VisionGrid(t, 1, 1, time_step=step)])
    assert pos[:, 0].tolist() == (torch.arange(t) * torch.tensor(step, dtype=torch.float32)).long().tolist()


@given(st.integers(1, 2000), st.integers(0, 64))
def test_short_binary_steps_are_exact(t, quarters):
    pos, _ = mrope_positions([VisionGrid(t, 1, 1, time_step=quarters / 4)])
    assert pos[:, 0].tolist() == [i * quarters // 4 for i in range(t)]


def test_spatial_and_max_agree_unless_time_outlasts_space():
    for t, h, w, step in [(1, 5, 3, 9.0), (3, 4, 2, 1.0), (2, 3, 3, 2.0), (4, 1, 6, 1.5)]:
        segs = [Text(2), VisionGrid(t, h, w, step), Text(3)]
        same = math.floor((t - 1) * step) < max(h, w)
        assert np.array_equal(mrope_positions(segs)[0], mrope_positions(segs, advance="spatial")[0]) == same


def test_from_processor_and_the_hf_layout():
    assert VisionGrid.from_processor([2, 16, 24], 2, tokens_per_second=2, second_per_grid=0.25) == VisionGrid(
        2, 8, 12, 0.5)
    assert VisionGrid(1, 1, 1, 0.1).time_step == float(np.float32(0.1))  # the step transformers multiplies by
    assert VisionGrid.from_processor(np.array([1, 28, 28]), 14) == VisionGrid(1, 2, 2)
    pos, _ = mrope_positions([Text(3), VisionGrid(1, 2, 2), Text(2)])
    hf = np.moveaxis(pos, -1, 0)[:, None]  # [3, b=1, s]
    assert np.array_equal(np.moveaxis(hf, 0, -1)[0], pos)
    assert mrope_decode_positions(np.array([-1, 4]), np.array([[9], [10]]), 2).shape == (2, 2, 2, 3)
    assert mrope_decode_positions(-2, 7, 0).shape == (0, 3)


# --- hostile input ----------------------------------------------------------------------

@pytest.mark.parametrize(("make", "words"), [
    (lambda: Text(-1), "n"), (lambda: Text(2.0), "n"), (lambda: Text(True), "n"), (lambda: Text(10**400), "n"),
    (lambda: VisionGrid(0, 2, 2), "t"), (lambda: VisionGrid(1, 0, 2), "h"), (lambda: VisionGrid(1, 2, -3), "w"),
    (lambda: VisionGrid(1.5, 2, 2), "t"), (lambda: VisionGrid(1, 2, 2, -0.5), "time_step"),
    (lambda: VisionGrid(1, 2, 2, float("nan")), "time_step"), (lambda: VisionGrid(1, 2, 2, "1"), "time_step"),
    (lambda: VisionGrid(1, 2, 2, 1e39), "time_step"),
    (lambda: VisionGrid.from_processor((2, 4, 4), tokens_per_second=2), "second_per_grid"),
    (lambda: VisionGrid.from_processor((2, 4, 4), tokens_per_second=1e30, second_per_grid=1e30), "time_step"),
    (lambda: VisionGrid.from_processor((2, 4, 4), tokens_per_second=-2, second_per_grid=1), "tokens_per_second"),
    (lambda: VisionGrid.from_processor((1, 5, 4), 2), "multiples"),
    (lambda: VisionGrid.from_processor((1, 4)), "t, h, w"), (lambda: VisionGrid.from_processor(5), "t, h, w"),
    (lambda: VisionGrid.from_processor((1, 4, 4), 0), "spatial_merge_size"),
    (lambda: mrope_positions([]), "at least one token"), (lambda: mrope_positions([Text(0)]), "at least one token"),
    (lambda: mrope_positions([Text(2), 3]), "segments[1]"), (lambda: mrope_positions(Text(2)), "segments"),
    (lambda: mrope_positions("text"), "segments"), (lambda: mrope_positions([Text(1)], advance="min"), "advance"),
    (lambda: mrope_positions([VisionGrid(10**6, 10**6, 10**6)]), "memory"),
    (lambda: mrope_positions([VisionGrid(2, 1, 1, 2.0**60)]), "2**53"),
    # a text that fits in memory (2**31 tokens would be refused first now, at the segment that passes memory)
    (lambda: mrope_positions([Text(2**20 - 1), VisionGrid(3, 1, 1, 2.0**52)]), "2**53"),
    (lambda: mrope_decode_positions(1.0, 5), "rope_delta"), (lambda: mrope_decode_positions(0, [1.5]), "start"),
    (lambda: mrope_decode_positions(-9, 5), "start + rope_delta"), (lambda: mrope_decode_positions(0, 2**53), "start"),
    (lambda: mrope_decode_positions(0, 1, -1), "count"), (lambda: mrope_decode_positions(0, 2**53 - 2, 9), "2**53"),
    (lambda: mrope_decode_positions([1, 2], [1, 2, 3]), "broadcast"),
    (lambda: mrope_decode_positions(np.zeros(10**6, np.int64), np.zeros((10**6, 1), np.int64), 10**3), "memory"),
    (lambda: mrope_decode_positions(0, [[1], [2, 3]]), "start"),
    (lambda: mrope_decode_positions(True, 3), "rope_delta"),
])
def test_hostile_input_is_refused_before_any_work(make, words):
    with pytest.raises(PosEncError) as info:
        make()
    assert words in str(info.value), str(info.value)


def test_segments_are_frozen():
    import dataclasses

    with pytest.raises(dataclasses.FrozenInstanceError):
        Text(3).n = 4  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        VisionGrid(1, 2, 2).time_step = 2.0  # type: ignore[misc]

"""``posenc parity CONFIG``: each RoPE implementation's cos/sin error for a checkpoint, and the settings they differ on.

CONFIG is a Hugging Face ``config.json``; :func:`posenc.parity.parity` does
the work (posenc, transformers float32 and bfloat16, stock vLLM float32 and
bfloat16, each when installed). Plain table or ``--json``.
"""

from __future__ import annotations

import argparse
import json
import math
from typing import Any

from ..errors import check_int
from ..parity import IMPLEMENTATIONS, parity
from ._base import CommandError, add_output_options, command, emit_json, integer, render_table, sig
from .grid import int_list

__all__ = ["read_config"]

MAX_CONFIG_BYTES = 16 * 2**20  # a config.json is kilobytes; anything this large is not one
MAX_LAYERS = 100_000  # far above any model's num_hidden_layers


def read_config(path: str) -> dict[str, Any]:
    """The JSON object in ``path``; a one-line refusal when it is missing, unreadable, too large or not an object."""
    try:
        with open(path, "rb") as f:
            data = f.read(MAX_CONFIG_BYTES + 1)
    except OSError as exc:
        raise CommandError(f"cannot read the config {path!r}: {exc.strerror or exc}") from None
    if len(data) > MAX_CONFIG_BYTES:
        raise CommandError(f"the config {path!r} is larger than {MAX_CONFIG_BYTES} bytes; expected a config.json")
    try:
        cfg = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise CommandError(f"the config {path!r} is not JSON: {exc}") from None
    if not isinstance(cfg, dict):
        raise CommandError(f"the config {path!r} must hold a JSON object (a config.json), got {type(cfg).__name__}")
    return cfg


def _setup(p: argparse.ArgumentParser) -> None:
    p.add_argument("config", metavar="CONFIG", help="a Hugging Face config.json")
    p.add_argument("--positions", type=int_list, metavar="P,P,...",
                   help="positions to measure (default 0, 1, 10, 100, … up to the config's max_position_embeddings)")
    p.add_argument("--layer", type=integer, metavar="N", help="the layer whose RoPE is wanted (layers that differ)")
    add_output_options(p, digits=3)


def _cell(x: float, digits: int) -> str:
    return "-" if math.isnan(x) else sig(x, digits)


@command("parity", "each RoPE implementation's cos/sin error against the exact value for a checkpoint's config "
                   "(posenc, transformers, vLLM), and the settings on which they disagree", _setup)
def parity_cmd(args: argparse.Namespace) -> int:
    if args.layer is not None:  # before the file is read: a refusal names the value as typed
        check_int(args.layer, "--layer", minimum=0, maximum=MAX_LAYERS)
    cfg = read_config(args.config)
    rep = parity(cfg, None if args.positions is None else list(args.positions), layer=args.layer)
    spec = rep.spec
    if args.json:
        emit_json({
            "config": args.config, "head_dim": spec.head_dim, "rotary_dim": spec.rotary_dim, "base": spec.base,
            "scaling": None if spec.scaling is None else repr(spec.scaling), "positions": rep.positions,
            "errors": {k: [None if math.isnan(e) else e for e in v] for k, v in rep.errors.items()},
            "attention_factors": rep.attention_factors, "unavailable": rep.unavailable,
            "disagreements": rep.disagreements,
        })
        return 0
    scaling = "none" if spec.scaling is None else type(spec.scaling).__name__
    print(f"RoPE parity of {args.config}: head_dim {spec.head_dim}, rotary_dim {spec.rotary_dim}, "
          f"base {spec.base:g}, scaling {scaling}")
    print("max over pairs of |cos - exact|, |sin - exact| (exact: the true value times the attention factor)")
    print()
    heads = ["implementation", "attention factor", *(f"p={p}" for p in rep.positions)]
    rows = [[name, f"{rep.attention_factors[name]:.7g}", *(_cell(e, args.digits) for e in rep.errors[name])]
            for name in IMPLEMENTATIONS if name in rep.errors]
    print(render_table(heads, rows, "lr" + "r" * len(rep.positions)))
    for name, why in rep.unavailable.items():
        print(f"  {name}: {why}")
    print()
    if rep.disagreements:
        print("settings on which they disagree:")
        for line in rep.disagreements:
            print(f"  {line}")
    else:
        print("no setting differs from transformers' definition beyond the implementations' rounding")
    return 0

"""``posenc alibi`` and ``posenc buckets``: the relative position biases, as tables or ``--json``.

``alibi --heads N`` lists each head's slope m_h (also as a power of two) and
the distance at which its penalty m_h·d reaches ``--penalty`` (the key's
attention weight then carries a factor exp(−penalty)); ``buckets`` lists
where each of T5's buckets starts and ends. Both call the public API
(:func:`posenc.alibi_slopes`, :func:`posenc.bias.alibi_distance`,
:func:`posenc.t5_bucket_edges`) and format its numbers.
"""

from __future__ import annotations

import argparse
import math
from typing import Any

import numpy as np

from ..bias.alibi import ALIBI_CONVENTIONS, Mpt, alibi_distance, alibi_slopes
from ..bias.t5 import T5Buckets, t5_bucket_edges, t5_buckets
from ._base import add_output_options, command, emit_json, integer, real, render_table, sig

__all__: list[str] = []


def _alibi_setup(p: argparse.ArgumentParser) -> None:
    p.add_argument("--heads", type=integer, required=True, metavar="N", help="attention heads")
    p.add_argument("--convention", choices=tuple(ALIBI_CONVENTIONS), default="press",
                   help="press/bloom: the paper's slopes (BLOOM uses them); mpt: 2^(-k·bias_max/P) (default press)")
    p.add_argument("--bias-max", type=real, default=None, metavar="B",
                   help="MPT's alibi_bias_max (default 8; implies --convention mpt)")
    p.add_argument("--penalty", type=real, default=1.0, metavar="P",
                   help="the penalty whose distance is listed: P/m_h (default 1, a factor e^-1 on the weight)")
    add_output_options(p)


def _power(m: float) -> str:
    """m as 2^x, x to 4 decimals: the slopes are powers of two."""
    return f"2^{math.log2(m):.4g}"


@command("alibi", "ALiBi's per-head slopes and the distance at which each head's penalty reaches a value",
         _alibi_setup)
def alibi_cmd(args: argparse.Namespace) -> int:
    conv: Any = args.convention
    if args.bias_max is not None:
        conv = Mpt(alibi_bias_max=args.bias_max)
    slopes = alibi_slopes(args.heads, convention=conv)
    reach = alibi_distance(args.heads, args.penalty, convention=conv)
    name = conv if isinstance(conv, str) else f"mpt (alibi_bias_max={conv.alibi_bias_max:g})"
    if args.json:
        emit_json({"convention": name, "heads": args.heads, "penalty": args.penalty,
                   "slopes": slopes, "log2_slopes": np.log2(slopes), "distance": reach})
        return 0
    print(f"ALiBi, {args.heads} heads, {name}: head h adds −m_h·(i − j) to the score of query i, key j")
    rows = [[str(h), sig(float(m), args.digits), _power(float(m)), sig(float(d), args.digits)]
            for h, (m, d) in enumerate(zip(slopes, reach, strict=True))]
    print(render_table(["head", "slope m", "as 2^x", f"distance to penalty {args.penalty:g}"], rows, "rrrr"))
    p = 1 << (args.heads.bit_length() - 1)
    if p != args.heads and args.bias_max is None:
        print(f"  {args.heads} is not a power of two: heads 0 … {p - 1} are the {p}-head series, "
              f"heads {p} … {args.heads - 1} the odd terms of the {2 * p}-head one")
    elif p != args.heads:
        print(f"  P = {2 * p}: heads 0 … {p - 1} take the even k of 2^(-k·{args.bias_max:g}/{2 * p}), "
              f"heads {p} … {args.heads - 1} the odd k")
    return 0


def _buckets_setup(p: argparse.ArgumentParser) -> None:
    p.add_argument("--num-buckets", type=integer, default=T5Buckets.num_buckets, metavar="N",
                   help="buckets in all (default 32, T5's)")
    p.add_argument("--max-distance", type=integer, default=T5Buckets.max_distance, metavar="D",
                   help="distances >= D share the last bucket (default 128, T5's)")
    p.add_argument("--unidirectional", action="store_true",
                   help="T5's decoder: keys after the query all get bucket 0 (default: the encoder's bidirectional)")
    add_output_options(p)


@command("buckets", "T5's relative-position buckets: the distances each bucket covers", _buckets_setup)
def buckets_cmd(args: argparse.Namespace) -> int:
    cfg = t5_buckets(None, "buckets", bidirectional=not args.unidirectional, num_buckets=args.num_buckets,
                     max_distance=args.max_distance)
    edges = t5_bucket_edges(bidirectional=cfg.bidirectional, num_buckets=cfg.num_buckets,
                            max_distance=cfg.max_distance)
    used = [int(e) for e in edges if e >= 0]
    ends = {int(e): (nxt - 1 if nxt is not None else None) for e, nxt in zip(used, [*used[1:], None], strict=True)}
    half = cfg.per_direction if cfg.bidirectional else 0
    table = [{"bucket": b, "first": int(e) if e >= 0 else None, "last": ends.get(int(e)) if e >= 0 else None,
              "after_bucket": b + half if cfg.bidirectional and b > 0 else None,
              "kind": "exact" if b < cfg.max_exact else "log"} for b, e in enumerate(edges)]
    if args.json:
        emit_json({"bidirectional": cfg.bidirectional, "num_buckets": cfg.num_buckets,
                   "max_distance": cfg.max_distance, "max_exact": cfg.max_exact, "buckets": table})
        return 0
    kind = "bidirectional (T5's encoder)" if cfg.bidirectional else "unidirectional (T5's decoder)"
    print(f"T5 buckets, {kind}: {cfg.num_buckets} buckets, max_distance {cfg.max_distance}; "
          f"distance d = |j − i|")
    head = ["bucket (key before)", "after", "distances", "kind"] if cfg.bidirectional else \
        ["bucket", "distances", "kind"]
    rows: list[list[str]] = []
    for r in table:
        span = "never used" if r["first"] is None else (
            f"{r['first']} …" if r["last"] is None else
            (str(r["first"]) if r["last"] == r["first"] else f"{r['first']} … {r['last']}"))
        after = "—" if r["after_bucket"] is None else str(r["after_bucket"])
        cells = [str(r["bucket"])] + ([after] if cfg.bidirectional else []) + [span, str(r["kind"])]
        rows.append(cells)
    print(render_table(head, rows, "rrll" if cfg.bidirectional else "rll"))
    if cfg.bidirectional:
        print(f"  keys after the query (j − i > 0) use buckets {half} …; bucket {half} itself never "
              f"(distance 0 is the query's own key, bucket 0)")
    else:
        print("  keys after the query (j − i > 0) all fall in bucket 0, which a causal mask hides")
    return 0

"""The RoPE options of ``ladder`` and ``context``: ``--rope``, ``--scaling``, ``--rotary-dim``, ``--seq-len``.

With any of them, ``--d-model`` is the head dimension and the ladder is the
rotary one (ω_i = base^(-2i/r) over the rotated channels r), after the
scaling: the wavelengths a model with that config actually sees, and which
pairs wrap over a context. ``--scaling NAME:key=value,...`` builds one of
:mod:`posenc.rope.scaling`'s variants from its field names (HF key names work
too), e.g. ``yarn:factor=4,original_max=32768`` or
``llama3:factor=8,low_freq_factor=1,high_freq_factor=4,original_max=8192``.
"""

from __future__ import annotations

import argparse
import dataclasses
import math
from typing import Any

from ..errors import PosEncError, check_context, show_value
from ..rope import ROPE_LAYOUTS
from ..rope.context import rope_context_report
from ..rope.frequencies import rope_frequencies
from ..rope.scaling import NTK, DynamicNTK, Linear, Llama3, LongRoPE, YaRN
from ._base import at_least, emit_json, integer, real, render_table, sig
from .typed import plain

__all__ = [
    "SCALING_NAMES",
    "context_rope",
    "ladder_rope",
    "rope_options",
    "scaling_spec",
    "spec_text",
    "wants_rope",
]

#: ``--scaling`` names: HF's rope_type names, plus ``ntk`` (static).
SCALING_NAMES: dict[str, type] = {
    "linear": Linear,
    "ntk": NTK,
    "dynamic": DynamicNTK,
    "yarn": YaRN,
    "llama3": Llama3,
    "longrope": LongRoPE,
}

_ALIASES = {"original_max_position_embeddings": "original_max"}


def _value(text: str) -> Any:
    """A scaling field's value: a count when it reads as one (``original_max=3.2768e4``), else a real; as typed."""
    low = text.strip().lower()
    if low in ("true", "false"):
        return low == "true"
    if low in ("none", "null"):
        return None
    if "/" in text:  # LongRoPE's factor lists: 1.0/1.02/1.03
        return tuple(real(v) for v in text.split("/"))
    try:
        return integer(text)
    except argparse.ArgumentTypeError:
        return real(text)  # its own refusal: "expected a number"


def _build(cls: type, kwargs: dict[str, Any]) -> Any:
    """``cls`` of the plain values; a refusal worded with the values as typed (:mod:`.typed`)."""
    try:
        return cls(**plain(kwargs))
    except PosEncError as exc:
        try:
            cls(**kwargs)
        except PosEncError as again:
            raise argparse.ArgumentTypeError(str(again)) from None
        raise argparse.ArgumentTypeError(str(exc)) from None


def scaling_spec(text: str) -> Any:
    """``NAME:key=value,...`` → a scaling variant (an argparse type: errors name the problem).

    >>> scaling_spec("yarn:factor=4,original_max=32768")
    YaRN(factor=4.0, original_max=32768, beta_fast=32.0, beta_slow=1.0, mscale=None, mscale_all_dim=None, \
attention_factor=None, truncate=True)
    """
    name, _, rest = text.partition(":")
    cls = SCALING_NAMES.get(name.strip().lower())
    if cls is None:
        raise argparse.ArgumentTypeError(
            f"unknown scaling {name.strip()!r}; expected one of {', '.join(SCALING_NAMES)} (e.g. yarn:factor=4,...)"
        )
    fields = [f.name for f in dataclasses.fields(cls)]
    kwargs: dict[str, Any] = {}
    for item in filter(None, (part.strip() for part in rest.split(","))):
        key, eq, raw = item.partition("=")
        key = _ALIASES.get(key.strip(), key.strip())
        if not eq or key not in fields:
            raise argparse.ArgumentTypeError(
                f"{name}: expected key=value with a key among {', '.join(fields)}, got {item!r}"
            )
        if key in kwargs:  # yarn:factor=4,factor=8 (or a key and its HF alias): which one was meant?
            raise argparse.ArgumentTypeError(f"{name}: {key} given twice, in {show_value(text)}")
        try:
            kwargs[key] = _value(raw)
        except (argparse.ArgumentTypeError, ValueError):
            raise argparse.ArgumentTypeError(f"{name}: {key} must be a number, got {raw!r}") from None
    required = [f.name for f in dataclasses.fields(cls)
                if f.default is dataclasses.MISSING and f.name not in kwargs]
    if required:
        raise argparse.ArgumentTypeError(f"{name} needs {', '.join(required)} (e.g. {name}:{required[0]}=...)")
    return _build(cls, kwargs)


def spec_text(scaling: Any) -> str:
    """The ``--scaling`` text of a variant, fields left at their defaults omitted (round-trips).

    >>> spec_text(YaRN(4.0, 32768))
    'yarn:factor=4,original_max=32768'
    """
    name = next(k for k, cls in SCALING_NAMES.items() if type(scaling) is cls)
    parts = []
    for f in dataclasses.fields(scaling):
        value = getattr(scaling, f.name)
        if f.default is not dataclasses.MISSING and value == f.default:
            continue
        if isinstance(value, tuple):
            text = "/".join(f"{v:g}" for v in value)
        elif isinstance(value, bool) or value is None:
            text = str(value).lower()
        else:
            text = f"{value:g}"
        parts.append(f"{f.name}={text}")
    return f"{name}:{','.join(parts)}"


def rope_options(parser: argparse.ArgumentParser) -> None:
    """Add ``--rope``, ``--scaling``, ``--rotary-dim`` and ``--seq-len``."""
    parser.add_argument("--rope", nargs="?", const="half", choices=ROPE_LAYOUTS, metavar="LAYOUT",
                        help="the rotary ladder: D is the head dim; pairs in LAYOUT (half, the default, or "
                             "interleaved)")
    parser.add_argument("--scaling", type=scaling_spec, metavar="SPEC",
                        help="a long-context scaling (implies --rope): NAME:key=value,... with NAME one of "
                             f"{', '.join(SCALING_NAMES)}, e.g. yarn:factor=4,original_max=32768")
    parser.add_argument("--rotary-dim", type=integer, metavar="R", help="rotated channels per head (default D)")
    parser.add_argument("--seq-len", type=integer, metavar="N",
                        help="the length that picks dynamic NTK's base / LongRoPE's factors (default: the context)")


def wants_rope(args: argparse.Namespace) -> bool:
    """True when any RoPE option was given."""
    return any(getattr(args, k, None) is not None for k in ("rope", "scaling", "rotary_dim", "seq_len"))


def _pairs(i: int, r: int, layout: str) -> str:
    return f"{i}, {i + r // 2}" if layout == "half" else f"{2 * i}, {2 * i + 1}"


def _describe(args: argparse.Namespace, rotary_dim: int, base: float, attention_factor: float) -> str:
    parts = [f"head_dim {args.d_model}", f"rotary_dim {rotary_dim}", f"base {args.base:g}"]
    if base != args.base:
        parts.append(f"effective base {base:.6g}")
    parts.append(f"layout {args.rope or 'half'}")
    if args.scaling is not None:
        parts.append(f"scaling {spec_text(args.scaling)}")
        parts.append(f"attention factor {attention_factor:.6g}")
    return ", ".join(parts)


def ladder_rope(args: argparse.Namespace) -> int:
    """``posenc ladder --rope/--scaling``: ω_i and λ_i after scaling, the stretch, turns over --context."""
    context = None if args.context is None else check_context(args.context)  # finite before ceil
    n = args.seq_len if args.seq_len is not None else (None if context is None else math.ceil(context))
    f = rope_frequencies(args.d_model, base=args.base, scaling=args.scaling, rotary_dim=args.rotary_dim,
                                seq_len=n)
    plain = rope_frequencies(args.d_model, base=args.base, rotary_dim=f.rotary_dim)
    stretch = f.wavelengths / plain.wavelengths
    rep = None
    if args.context is not None:
        rep = rope_context_report(args.context, args.d_model, base=args.base, scaling=args.scaling,
                                         rotary_dim=args.rotary_dim, seq_len=n)
    layout = args.rope or "half"
    if args.json:
        data: dict[str, object] = {
            "head_dim": args.d_model, "rotary_dim": f.rotary_dim, "base": args.base, "effective_base": f.base,
            "layout": layout, "scaling": None if args.scaling is None else spec_text(args.scaling),
            "attention_factor": f.attention_factor, "seq_len": n, "omega": f.inv_freq, "wavelength": f.wavelengths,
            "plain_wavelength": plain.wavelengths, "stretch": stretch,
        }
        if rep is not None:
            data.update(context=rep.context, loops=rep.loops, wraps=rep.loops > 1.0,
                        wrapped_channels=rep.wrapped_channels)
        emit_json(data)
        return 0
    r = f.rotary_dim
    print(f"RoPE ladder ω_i = base^(-2i/r){' after scaling' if args.scaling is not None else ''}, "
          f"λ_i = 2π/ω_i: {_describe(args, r, f.base, f.attention_factor)}; {r // 2} pairs")
    print()
    heads = ["i", "channels", "ω_i", "λ_i (positions)"]
    if args.scaling is not None:
        heads += ["unscaled λ_i", "stretch"]
    if rep is not None:
        heads += [f"turns over {rep.context:g}", "wraps"]
    rows = []
    for i in range(r // 2):
        row = [str(i), _pairs(i, r, layout), sig(float(f.inv_freq[i]), args.digits),
               sig(float(f.wavelengths[i]), args.digits)]
        if args.scaling is not None:
            row += [sig(float(plain.wavelengths[i]), args.digits), f"×{float(stretch[i]):.4g}"]
        if rep is not None:
            loops = float(rep.loops[i])
            row += [sig(loops, max(args.digits - 2, 3)), "yes" if loops > 1.0 else "no"]
        rows.append(row)
    print(render_table(heads, rows, "rrrrrrrl" if args.scaling is not None else "rrrrrl"))
    print()
    i_max = int(f.wavelengths.argmax())
    print(f"  λ_max = {sig(float(f.wavelengths[i_max]), args.digits)} positions (pair {i_max})"
          + (f", unscaled {sig(float(plain.wavelengths.max()), args.digits)}" if args.scaling is not None else ""))
    if rep is not None:
        slow = "wraps" if rep.wraps else "does not wrap"
        print(f"  {rep.wrapped_channels} of {r // 2} pairs wrap over {rep.context:g} positions; "
              f"the slowest {slow} ({float(rep.loops.min()):.4g} turns)")
    return 0


def context_rope(args: argparse.Namespace) -> int:
    """``posenc context C --rope/--scaling``: does the rotary ladder, after scaling, cover C positions?"""
    rep = rope_context_report(args.context, args.d_model, base=args.base, scaling=args.scaling,
                                     rotary_dim=args.rotary_dim, seq_len=args.seq_len)
    status = 1 if (args.check and rep.wraps) else 0
    n = len(rep.loops)
    slowest = float(rep.loops.min())
    if args.json:
        emit_json({
            "context": rep.context, "head_dim": rep.head_dim, "rotary_dim": rep.rotary_dim, "base": args.base,
            "effective_base": rep.base, "layout": args.rope or "half",
            "scaling": None if args.scaling is None else spec_text(args.scaling),
            "attention_factor": rep.attention_factor, "max_wavelength": rep.max_wavelength,
            "unscaled_max_wavelength": float(rep.plain_wavelengths.max()), "slowest_loops": slowest,
            "wraps": rep.wraps, "wrapped_channels": rep.wrapped_channels, "pairs": n,
            "min_base": rep.min_base if rep.min_base is not None and math.isfinite(rep.min_base) else None,
        })
        return status
    d = args.digits
    print(f"context {rep.context:g} positions, RoPE: "
          f"{_describe(args, rep.rotary_dim, rep.base, rep.attention_factor)}")
    print()
    rows = [["λ_max (after scaling)" if args.scaling is not None else "λ_max = 2π·base^((r-2)/r)",
             f"{sig(rep.max_wavelength, d)} positions"]]
    if args.scaling is not None:
        rows.append(["λ_max without the scaling", f"{sig(float(rep.plain_wavelengths.max()), d)} positions"])
    rows += [
        ["turns of the slowest pair", sig(slowest, max(d - 2, 3))],
        ["pairs that turn more than once", f"{rep.wrapped_channels} of {n}"],
    ]
    if rep.min_base is not None:
        mb = at_least(rep.min_base, d) if math.isfinite(rep.min_base) else "none (r = 2: one pair)"
        rows.append(["smallest base that does not wrap", mb])
    print(render_table(["", ""], rows, "ll").split("\n", 1)[1])
    print()
    verdict = "FAILS" if rep.wraps else "OK"
    what = "wraps" if rep.wraps else "does not wrap"
    print(f"{verdict}: the slowest rotary pair {what}: it turns {slowest:.4g} times over {rep.context:g} positions "
          f"(λ_max {sig(rep.max_wavelength, d)} {'<' if rep.wraps else '>='} {rep.context:g})")
    return status

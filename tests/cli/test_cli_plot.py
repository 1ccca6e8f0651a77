"""plot: every figure from the command.

Run in process. Expected numbers come from the seed's text or from mpmath
(tests/reference.py), never from posenc's own output.
"""

from __future__ import annotations

import sys
import xml.etree.ElementTree as ET

import pytest

from cli_helpers import run

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
MISSING = "posenc: error: plotting needs matplotlib: pip install 'posenc[plot]'\n"


# ---------------------------------------------------------------- plot, tour

@pytest.mark.parametrize("kind", ["wave", "rotation", "heatmap", "kernel", "ladder"])
def test_plot_png(capsys, tmp_path, kind):
    path = tmp_path / f"{kind}.png"
    code, out, err = run(capsys, "plot", kind, "--out", str(path))
    assert code == 0 and err == "" and f"wrote {path}" in out
    assert path.read_bytes()[:8] == PNG_MAGIC


def test_plot_svg_with_options(capsys, tmp_path):
    path = tmp_path / "r.svg"
    code, _, _ = run(capsys, "plot", "rotation", "--by", "-5", "--out", str(path))
    assert code == 0
    assert ET.parse(path).getroot().tag.endswith("svg")
    path = tmp_path / "k.svg"
    assert run(capsys, "plot", "kernel", "--d-model", "16", "--refs", "0", "7", "--max-offset", "20",
               "--out", str(path))[0] == 0
    assert ET.parse(path).getroot().tag.endswith("svg")


def test_plot_without_matplotlib(capsys, monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import matplotlib now raises ImportError
    monkeypatch.setitem(sys.modules, "matplotlib.figure", None)
    code, out, err = run(capsys, "plot", "wave", "--out", str(tmp_path / "w.png"))
    assert (code, out, err) == (2, "", MISSING)
    assert not (tmp_path / "w.png").exists()
    code, out, err = run(capsys, "tour", "--out", str(tmp_path / "t"))  # the tour skips its figures only
    assert code == 0 and err == "" and "8 of 8 cases verified" in out and out.rstrip().endswith("[plot]'")
    assert not (tmp_path / "t").exists()


def test_plot_help_states_the_functions_defaults():
    import inspect
    import re
    from dataclasses import MISSING, fields

    def dataclass_fields(cls):
        return [f.name for f in fields(cls) if f.default is not MISSING]

    from posenc.bias import T5Buckets
    from posenc.cli.plotting import PLOT_KINDS
    from posenc.rope.spec import RopeConfig
    from posenc.sinusoidal.conventions import Vaswani

    # a setting taken as **settings (a family's TypedDict) has its default in the family's spec alone
    spec = {"Unpack[SinusoidSettings]": Vaswani, "Unpack[T5Settings]": T5Buckets, "Unpack[RopeSettings]": RopeConfig,
            "Unpack[RopeFrequencySettings]": RopeConfig, "Unpack[RopeLadderSettings]": RopeConfig}
    for kind in PLOT_KINDS.values():
        params = dict(inspect.signature(kind.draw).parameters)
        for p in list(params.values()):
            if p.kind is p.VAR_KEYWORD and str(p.annotation) in spec:
                family = spec[str(p.annotation)]
                params.update({k: p.replace(name=k, kind=p.KEYWORD_ONLY, default=getattr(family, k),
                                            annotation=p.empty) for k in dataclass_fields(family)})
        for o in kind.options:
            m = re.search(r"\(default ([^)]*)\)", o.help)
            if m is None or params[o.dest].default is None:  # "(default the centre)": words, not a value
                assert params[o.dest].default is None, (kind.name, o.dest)  # "the slowest" and the like
                continue
            default = params[o.dest].default
            if isinstance(default, tuple):  # repeated values (--refs 0 1000) or one list (--grid 16,16)
                shown = {sep.join(f"{v:g}" for v in default) for sep in (" ", ",")}
            else:
                shown = {default if isinstance(default, str) else f"{default:g}"}
            assert m.group(1) in shown, (kind.name, o.dest)

"""The version matrix (tests/hf/matrix.py) holds for the installed transformers: each family builds and is patched,
or is absent / refused by name exactly where the table says; the how-to's table is that table.

``make test`` runs this file under every tested release (``requirements-hf/``,
``POSENC_TRANSFORMERS`` naming the release it installed).
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

import matrix  # noqa: E402
from families import ALL, build_any  # noqa: E402

import posenc  # noqa: E402
import posenc.hf  # noqa: E402
from posenc.hf.rotary import PatchedRotary, PatchedSinCos  # noqa: E402
from posenc.hf.tables import PatchedSinCosRotary, PatchedSinusoidal  # noqa: E402
from posenc.hf.versions import TESTED  # noqa: E402

PAGE = Path(__file__).resolve().parents[2] / "docs" / "how-to" / "hf-patch.md"


def patched(model) -> bool:
    """Whether anything of posenc's is in the model: a rotary replacement, a table, or ALiBi's hooks."""
    return any(isinstance(m, (PatchedRotary, PatchedSinCosRotary, PatchedSinusoidal))
               or isinstance(vars(m).get("_get_embed_positions"), PatchedSinCos) or "_posenc_stock_table" in vars(m)
               or type(vars(m).get("build_mpt_alibi_tensor")).__name__ == "_MptAlibi"
               for m in model.modules()) or getattr(model, "_posenc_alibi_hooks", None) is not None


def test_the_installed_transformers_is_the_matrix_release_asked_for():
    asked = os.environ.get("POSENC_TRANSFORMERS")  # set by make test's matrix, one run per release
    if asked is not None:
        assert transformers.__version__ == asked, (transformers.__file__, asked)
        assert Path(transformers.__file__).parents[1].name == asked  # from .venv-hf/<release>, not .venv
    assert matrix.known() and matrix.VERSION in TESTED
    assert set(matrix.ABSENT) == set(matrix.REFUSED) == set(TESTED)


@pytest.mark.parametrize("name", ALL)
def test_each_family_builds_exactly_where_the_matrix_says(name):
    why = matrix.absent(name)
    if why is None:
        assert isinstance(build_any(name), torch.nn.Module)
    else:
        with pytest.raises((AttributeError, ModuleNotFoundError, ValueError, TypeError)):
            build_any(name)


@pytest.mark.parametrize("name", ALL)
def test_each_family_is_patched_or_refused_by_name_as_the_matrix_says(name):
    if matrix.absent(name) is not None:
        pytest.skip(f"transformers {matrix.VERSION}: {matrix.absent(name)} (checked by the test above)")
    model = build_any(name)
    pattern = matrix.refused(name)
    if pattern is None:
        assert patched(posenc.hf.patch(model))
        posenc.hf.unpatch(model)
        assert not patched(model)
        return
    head = f"model_type '{model.config.model_type}' under transformers {re.escape(matrix.VERSION)}"
    with pytest.raises(posenc.PosEncError, match=rf"^{head}: .*{pattern}"):
        posenc.hf.patch(model)
    assert not patched(model)  # nothing changed


def _page_table(title: str) -> tuple[list[str], dict[str, list[str]]]:
    """(header cells, first cell -> the other cells) of the markdown table under the heading ``title``."""
    text = PAGE.read_text(encoding="utf-8")
    section = text.split(f"\n## {title}\n", 1)[1].split("\n## ", 1)[0]
    rows = [[c.strip() for c in line.strip().strip("|").split("|")] for line in section.splitlines()
            if line.startswith("|") and not line.startswith("|---")]
    return rows[0], {r[0]: r[1:] for r in rows[1:]}


def test_the_how_to_version_table_is_the_matrix():
    header, rows = _page_table("Tested transformers releases")
    assert header[1:] == list(TESTED)
    cells = {"patched": lambda v, n: matrix.ABSENT[v].get(n) is None and matrix.REFUSED[v].get(n) is None,
             "not in it": lambda v, n: matrix.ABSENT[v].get(n) is not None,
             "refused": lambda v, n: matrix.REFUSED[v].get(n) is not None}
    named = {re.search(r"`([^`]+)`", first).group(1): cells_ for first, cells_ in rows.items()}
    assert sorted(named) == sorted(ALL)
    for name, row in named.items():
        for version, cell in zip(TESTED, row, strict=True):
            assert cells[cell.split(":")[0].strip("* ")](version, name), (name, version, cell)


def test_the_declared_transformers_range_is_the_tested_span():
    """pyproject's posenc[hf] allows exactly the releases the matrix tests: the floor, up to the newest series."""
    import tomllib

    from posenc.hf.versions import release

    project = tomllib.loads((PAGE.parents[2] / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    spec = next(r for r in project["optional-dependencies"]["hf"] if r.startswith("transformers"))
    lo, hi = release(TESTED[0]), release(TESTED[-1])
    assert spec == f"transformers>={lo[0]}.{lo[1]},<{hi[0]}.{hi[1] + 1}", spec


def _classes_named_by_the_tests() -> set[str]:
    """Every transformers class name quoted in tests/hf (the families' tables and the tests' own)."""
    names: set[str] = set()
    for file in Path(__file__).parent.glob("*.py"):
        names |= set(re.findall(r'"([A-Z][A-Za-z0-9_]*(?:Config|Model|ForCausalLM|ForConditionalGeneration|'
                                r'LMHeadModel))"', file.read_text(encoding="utf-8")))
    return names


def test_the_classes_the_matrix_says_a_release_lacks_are_missing_and_every_other_is_there():
    lacks = matrix.LACKS[matrix.VERSION]
    assert set(matrix.LACKS) == set(TESTED)
    named = _classes_named_by_the_tests() | {c for table in matrix.LACKS.values() for c in table}
    assert set(lacks) <= named and len(named) > 40
    missing = {c for c in named if not hasattr(transformers, c)}
    assert missing == set(lacks), (sorted(missing - set(lacks)), sorted(set(lacks) - missing))


def test_have_skips_exactly_where_the_table_says():
    lacked = sorted(matrix.LACKS[matrix.VERSION])
    for cls in lacked:
        with pytest.raises(pytest.skip.Exception, match=re.escape(matrix.LACKS[matrix.VERSION][cls])):
            matrix.have("LlamaConfig", cls)
    matrix.have("LlamaConfig", "LlamaForCausalLM")  # in every release: no skip

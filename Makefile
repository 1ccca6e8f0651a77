# `make tour`: the main job. `make test`: every test, lint and type check, and the docs site's build (the
# page's and the site's browser tests drive the system Chromium: Debian package `chromium`; the golden
# fingerprint runs the page's script under node: Debian package `nodejs`). `make test-fast`: the tests not
# marked slow, for the edit loop; `make test-deep`: every test with ten times the hypothesis examples.
# `make docs`: the site.
# Each target creates what it needs in .venv first.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
# pytest on every core (pytest-xdist), at most 8 workers; tests sharing expensive set-up stay on one worker
# (--dist loadgroup, the groups of tests/conftest.py). PYTEST_PARALLEL= runs it in one process.
PYTEST_PARALLEL ?= -n auto --maxprocesses 8 --dist loadgroup

.PHONY: tour test test-fast test-deep lint bench docs bench-docs clean

$(STAMP): pyproject.toml requirements-dev.txt
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --disable-pip-version-check -r requirements-dev.txt -e '.[torch,plot,fast,jax]'
	touch $(STAMP)

tour: $(STAMP)
	$(PY) -m posenc tour

test: $(STAMP) lint
	@command -v chromium >/dev/null 2>&1 || test -x "$$POSENC_CHROMIUM" || { echo "make test: the page's browser \
	tests need Chromium: run 'apt-get update && apt-get install -y chromium' as root"; exit 1; }
	@command -v node >/dev/null 2>&1 || test -x "$$POSENC_NODE" || { echo "make test: the golden fingerprint runs \
	the page's exact.js under node: run 'apt-get update && apt-get install -y nodejs' as root"; exit 1; }
	$(PY) -m pytest -q $(PYTEST_PARALLEL)

# the edit loop's subset (about 2 minutes on 2 cores): every test not marked slow (tests/conftest.py marks the
# browser, site, JAX, transformers and compile tiers); `make test` runs them all
test-fast: $(STAMP)
	$(PY) -m pytest -q $(PYTEST_PARALLEL) -m "not slow"

# the whole suite with ten times the hypothesis examples (the "deep" profile of tests/conftest.py)
test-deep: $(STAMP) lint
	HYPOTHESIS_PROFILE=deep $(PY) -m pytest -q $(PYTEST_PARALLEL)

lint: $(STAMP)
	$(PY) -m ruff check src tests tools
	$(PY) -m mypy

bench: $(STAMP)
	$(PY) -m posenc bench

# the documentation site, into site/ (open site/index.html: it works from disk, search included)
docs: $(STAMP)
	NO_MKDOCS_2_WARNING=1 $(PY) -m mkdocs build --strict

# the benchmarks page's table: a full `posenc bench --markdown` run on this machine (about a minute),
# written aside and renamed; commit docs/generated/bench.md with the change that moved the numbers
bench-docs: $(STAMP)
	$(PY) -m posenc bench --markdown > docs/generated/bench.md.tmp
	mv docs/generated/bench.md.tmp docs/generated/bench.md

# every cache the tools leave in the tree: pip/build, pytest, hypothesis, mypy, ruff, Python and numba
# (numba's cache=True kernels go to __pycache__), the tour's figures and the docs site
clean:
	rm -rf $(VENV) posenc-tour posenc-page site build dist *.egg-info src/*.egg-info .pytest_cache .hypothesis .mypy_cache .ruff_cache
	find . \( -name __pycache__ -type d -prune -exec rm -rf {} + \) -o \( -name '*.py[co]' -type f -exec rm -f {} + \)

# `make tour`: the main job. `make test`: every test, lint and type check (the page's tests drive the
# system Chromium: Debian package `chromium`; the golden fingerprint runs the page's script under node:
# Debian package `nodejs`).
# Each target creates what it needs in .venv first.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: tour test lint bench clean

$(STAMP): pyproject.toml requirements-dev.txt
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --disable-pip-version-check -r requirements-dev.txt -e '.[torch,plot,fast]'
	touch $(STAMP)

tour: $(STAMP)
	$(PY) -m posenc tour

test: $(STAMP) lint
	@command -v chromium >/dev/null 2>&1 || test -x "$$POSENC_CHROMIUM" || { echo "make test: the page's browser \
	tests need Chromium: run 'apt-get update && apt-get install -y chromium' as root"; exit 1; }
	@command -v node >/dev/null 2>&1 || test -x "$$POSENC_NODE" || { echo "make test: the golden fingerprint runs \
	the page's exact.js under node: run 'apt-get update && apt-get install -y nodejs' as root"; exit 1; }
	$(PY) -m pytest -q

lint: $(STAMP)
	$(PY) -m ruff check src tests tools
	$(PY) -m mypy

bench: $(STAMP)
	$(PY) -m posenc bench

# every cache the tools leave in the tree: pip/build, pytest, hypothesis, mypy, ruff, Python and numba
# (numba's cache=True kernels go to __pycache__), and the tour's figures
clean:
	rm -rf $(VENV) posenc-tour posenc-page build dist *.egg-info src/*.egg-info .pytest_cache .hypothesis .mypy_cache .ruff_cache
	find . \( -name __pycache__ -type d -prune -exec rm -rf {} + \) -o \( -name '*.py[co]' -type f -exec rm -f {} + \)

# `make tour`: the main job. `make test`: every test, lint and type check, and the docs site's build (the
# page's and the site's browser tests drive the system Chromium: Debian package `chromium`; the golden
# fingerprint runs the page's script under node: Debian package `nodejs`), then the transformers patch's tests
# under each release of requirements-hf/ (`make hf-matrix`) and posenc.vllm's against vLLM (`make test-vllm`).
# `make test-fast`: the tests not marked slow, for the edit loop; `make test-deep`: every test with ten times
# the hypothesis examples. `make docs`: the site.
# Each target creates what it needs in .venv first.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
# posenc.vllm's tests run against the real vLLM in an environment of their own (a CUDA build of torch beside
# the main env's CPU one): 4-7 minutes and 9.5 GB the first time, then cached until requirements-vllm.txt
# or pyproject.toml changes
VLLM_VENV := .venv-vllm
VLLM_PY := $(VLLM_VENV)/bin/python
VLLM_STAMP := $(VLLM_VENV)/.installed
# posenc.sglang's tests against the real SGLang 0.5.23 (torch 2.14.1, a CUDA 13 build; 206 pins): 10.5 GB and
# about 10 minutes the first time, then cached; `make test` runs it (`make test-sglang` alone)
SGLANG_VENV := .venv-sglang
SGLANG_PY := $(SGLANG_VENV)/bin/python
SGLANG_STAMP := $(SGLANG_VENV)/.installed

# The transformers releases the patch's tests also run under (.venv holds 5.23.0, requirements-dev.txt): each
# release's pinned packages (requirements-hf/<release>.txt: transformers and the hub packages it checks) go into
# .venv-hf/<release>/, put in front of .venv's packages (torch, numpy, ...) with PYTHONPATH. Created on first use.
HF_RELEASES := $(patsubst requirements-hf/%.txt,%,$(sort $(wildcard requirements-hf/*.txt)))
HF_ENVS := $(HF_RELEASES:%=.venv-hf/%/.installed)
# what the matrix runs per release: tests/hf, the patch modules' doctests and the how-to page's examples
HF_TESTS := tests/hf src/posenc/hf \
	'tests/docs/test_docs_examples.py::test_code_blocks_run_as_written[docs/how-to/hf-patch.md]'

# pytest on every core (pytest-xdist), at most 8 workers; tests sharing expensive set-up stay on one worker
# (--dist loadgroup, the groups of tests/conftest.py). PYTEST_PARALLEL= runs it in one process.
PYTEST_PARALLEL ?= -n auto --maxprocesses 8 --dist loadgroup

.PHONY: tour test test-fast test-deep hf-matrix test-vllm test-sglang lint bench docs bench-docs clean

$(STAMP): pyproject.toml requirements-dev.txt
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --disable-pip-version-check -r requirements-dev.txt -e '.[torch,plot,fast,jax]'
	touch $(STAMP)

$(VLLM_STAMP): pyproject.toml requirements-vllm.txt
	test -x $(VLLM_PY) || $(PYTHON) -m venv $(VLLM_VENV)
	$(VLLM_PY) -m pip install --quiet --disable-pip-version-check -r requirements-vllm.txt
	$(VLLM_PY) -m pip install --quiet --disable-pip-version-check --no-deps --no-build-isolation -e .
	touch $(VLLM_STAMP)

tour: $(STAMP)
	$(PY) -m posenc tour

test: $(STAMP) lint $(HF_ENVS) test-vllm test-sglang
	@command -v chromium >/dev/null 2>&1 || test -x "$$POSENC_CHROMIUM" || { echo "make test: the page's browser \
	tests need Chromium: run 'apt-get update && apt-get install -y chromium' as root"; exit 1; }
	@command -v node >/dev/null 2>&1 || test -x "$$POSENC_NODE" || { echo "make test: the golden fingerprint runs \
	the page's exact.js under node: run 'apt-get update && apt-get install -y nodejs' as root"; exit 1; }
	$(PY) -m pytest -q $(PYTEST_PARALLEL)
	@$(MAKE) --no-print-directory hf-matrix

.venv-hf/%/.installed: requirements-hf/%.txt $(STAMP)
	rm -rf .venv-hf/$*
	$(PY) -m pip install --quiet --disable-pip-version-check --no-deps --only-binary=:all: \
		--target .venv-hf/$* -r requirements-hf/$*.txt
	touch $@

# the patch's tests under each release of HF_RELEASES, one pytest run each (5.23.0 ran in `make test`'s own run);
# USE_HUB_KERNELS=0: transformers 5.25's from_pretrained otherwise asks for the kernels package, which PyPI lacks
hf-matrix: $(STAMP) $(HF_ENVS)
	@failed=; for v in $(HF_RELEASES); do echo "== transformers $$v: the patch's tests"; \
		PYTHONPATH=$(CURDIR)/.venv-hf/$$v$${PYTHONPATH:+:$$PYTHONPATH} POSENC_TRANSFORMERS=$$v USE_HUB_KERNELS=0 \
		$(PY) -m pytest -q $(HF_TESTS) || failed="$$failed $$v"; done; \
	test -z "$$failed" || { echo "make hf-matrix: the patch's tests failed under transformers$$failed"; exit 1; }

# posenc.vllm against vLLM 0.33.0 on the CPU: tests/vllm and the module's doctests (the main run leaves both
# out: pyproject's norecursedirs)
test-vllm: $(VLLM_STAMP)
	$(VLLM_PY) -m pytest -q tests/vllm src/posenc/vllm

$(SGLANG_STAMP): pyproject.toml requirements-sglang.txt
	test -x $(SGLANG_PY) || $(PYTHON) -m venv $(SGLANG_VENV)
	$(SGLANG_PY) -m pip install --quiet --disable-pip-version-check -r requirements-sglang.txt
	$(SGLANG_PY) -m pip install --quiet --disable-pip-version-check --no-deps --no-build-isolation -e .
	touch $(SGLANG_STAMP)

# posenc.sglang against SGLang 0.5.23 on the CPU (SGLANG_USE_CPU_ENGINE=1: SGLang's CPU layers, no vllm import)
test-sglang: $(SGLANG_STAMP)
	SGLANG_USE_CPU_ENGINE=1 $(SGLANG_PY) -m pytest -q tests/sglang src/posenc/sglang

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
	rm -rf $(VENV) .venv-hf $(VLLM_VENV) $(SGLANG_VENV) posenc-tour posenc-page site build dist *.egg-info src/*.egg-info .pytest_cache .hypothesis .mypy_cache .ruff_cache
	find . \( -name __pycache__ -type d -prune -exec rm -rf {} + \) -o \( -name '*.py[co]' -type f -exec rm -f {} + \)

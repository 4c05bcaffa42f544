# The two commands of the README. Each sets up what it needs (a local virtualenv from
# PyPI), then runs. CORES defaults to every core of the machine.
#
# Set-up installs with uv (bootstrapped from PyPI into the virtualenv): it resolves in
# seconds and links packages from its cache (~/.cache/uv) instead of unpacking them again,
# so a second clone on a machine sets up in about a minute where pip took about 3.5 (the
# CUDA build of PyTorch alone is 5.5 GB; benchmarks/setup_time.py measures both). uv reads
# its own settings (UV_INDEX_URL, uv.toml), not pip.conf: `make setup INSTALLER=pip` uses
# pip instead. Either way the installed packages are byte-compiled, as pip does by
# default; where PYTHONDONTWRITEBYTECODE is set, each of a run's hundreds of job processes
# would otherwise compile pandas, torch and judgebias's own modules again. Set-up also
# compiles judgebias's own modules, which an editable install leaves as source. That
# compiling is most of a set-up from a warm cache (about 105 of its 130 s of CPU, issue 24).
#
# TORCH=cpu (opt-in; `rm -rf .venv` first if one exists) installs PyTorch's CPU build
# from PyTorch's own index, download.pytorch.org/whl/cpu (uv's --torch-backend; pip's
# --extra-index-url), not PyPI's CUDA build: about 4.7 GB less in .venv and 2.8 GB less
# to download, no faster from a warm cache; no GPU for MMB's embeddings or FRAME's
# images. PyPI has no CPU build of torch for Linux x86_64, so the default stays CUDA.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
CORES ?= $(shell nproc 2>/dev/null || echo 2)
INSTALLER ?= uv
ifeq ($(INSTALLER),pip)
BOOTSTRAP := --upgrade pip
INSTALL := $(BIN)/pip install --quiet
else ifeq ($(INSTALLER),uv)
BOOTSTRAP := "uv>=0.9,<1"
INSTALL := $(BIN)/uv pip install --quiet --compile-bytecode --python $(BIN)/python
else
$(error INSTALLER must be uv or pip, not "$(INSTALLER)")
endif
TORCH ?=
ifeq ($(TORCH),cpu)
TORCH_CPU_uv := --torch-backend cpu
TORCH_CPU_pip := --extra-index-url https://download.pytorch.org/whl/cpu
INSTALL += $(TORCH_CPU_$(INSTALLER))
else ifneq ($(TORCH),)
$(error TORCH must be cpu or empty (PyPI's CUDA build), not "$(TORCH)")
endif

.PHONY: run test test-fast setup dvc-repro lint docs

$(BIN)/judgebias: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet $(BOOTSTRAP)
	$(INSTALL) -e ".[test,slurm]"
	$(BIN)/python -m compileall -q src
	touch $@

setup: $(BIN)/judgebias

# Set up, validate params.yaml, and run the whole default pipeline (offline).
# judgebias-warm: the jobs fork from a process that has imported pandas & co. once
# (src/judgebias/warm.py); plain `snakemake` runs the same jobs, each starting cold.
run: setup
	$(BIN)/judgebias validate
	PATH="$(abspath $(BIN)):$$PATH" $(BIN)/judgebias-warm -- $(BIN)/snakemake --cores $(CORES)
	@echo "report: results/report.html   card: .venv/bin/judgebias card JUDGE   headline metrics: results/card/"

# Set up and run the linter and the whole test suite (slow end-to-end tests included; the
# type checker, `mypy src`, is one of them: tests/core/test_types.py). `--dist loadfile`: each test file runs whole on one worker, longest
# first (tests/conftest.py); `--no-loadscope-reorder` keeps that order (xdist would sort
# the files by their number of tests, which puts the long one-test pipeline files last).
test: setup
	$(BIN)/ruff check src tests benchmarks
	PATH="$(abspath $(BIN)):$$PATH" $(BIN)/python -m pytest -n $(CORES) --dist loadfile --no-loadscope-reorder -q --durations=25

# The linter and the fast tests only: no end-to-end pipeline run, no Slurm cluster, DVC
# remote, browser, vLLM environment or GPU (the markers in pyproject.toml). About 4 minutes
# of CPU in all (user + sys, 990 tests), so about 2 minutes of wall time on 2 idle cores.
FAST := not slow and not slurm and not remote and not browser and not vllm_cpu and not gpu
test-fast: setup
	$(BIN)/ruff check src tests benchmarks
	PATH="$(abspath $(BIN)):$$PATH" $(BIN)/python -m pytest -n $(CORES) -q -m "$(FAST)" --durations=10

# Set up and build the documentation site (mkdocs.yml, docs/) into site/; any warning (a
# broken link or anchor, a page left out of the nav) fails the build.
docs: setup
	$(BIN)/mkdocs build --strict

# The same pipeline through DVC's front door; Snakemake's records follow (nothing left to do).
dvc-repro: setup
	PATH="$(abspath $(BIN)):$$PATH" $(BIN)/judgebias-warm -- $(BIN)/judgebias dvc-repro

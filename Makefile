# coursepack: `make packs` builds verified zips into build/dist; `make test` runs the tests.
# Both set up what they need in .venv on first use. To use an existing Python environment instead
# (an offline GPU machine, say), pass it: `make packs PYTHON=python3`.

PYTHON ?=
RUNNER ?= auto
SLURM_CONFIG ?=
JOBS ?=
ARGS ?=
N ?=
VENV := .venv

ifeq ($(strip $(PYTHON)),)
PY := $(VENV)/bin/python
SETUP := $(VENV)/.installed
else
PY := $(PYTHON)
SETUP :=
endif

export PYTHONPATH := $(CURDIR)$(if $(PYTHONPATH),:$(PYTHONPATH))

.PHONY: packs verify lint test test-gpu test-slurm golden bench clean distclean

packs: $(SETUP)
	$(PY) -m generator build --runner $(RUNNER) $(if $(JOBS),-j $(JOBS)) $(if $(SLURM_CONFIG),--slurm-config $(SLURM_CONFIG)) $(ARGS)

verify: $(SETUP)
	$(PY) -m generator verify --runner $(RUNNER) $(if $(JOBS),-j $(JOBS)) $(if $(SLURM_CONFIG),--slurm-config $(SLURM_CONFIG)) $(ARGS)

# ruff (pinned in requirements/lock.txt; settings and what it leaves out in pyproject.toml): the lint
# rules, then the formatting, checked; `ruff format` (and `ruff check --fix`) rewrite the files.
RUFF := $(if $(strip $(PYTHON)),$(PY) -m ruff,$(VENV)/bin/ruff)
lint: $(SETUP)
	$(RUFF) check .
	$(RUFF) format --check .

# The suite runs in one process per CPU and one more (pytest-xdist; the Slurm and browser files
# mostly wait), a test file per process at a time; TEST_PROCS=0 runs it in this process alone.
TEST_PROCS ?= $(shell python3 -c "import os; print((os.cpu_count() or 1) + 1)")
test: $(SETUP) lint
	$(PY) -m pytest -q -n $(TEST_PROCS) --dist loadfile --no-loadscope-reorder $(ARGS)

# GPU tests only (they skip, with the reason, where no CUDA GPU is visible).
test-gpu: $(SETUP)
	$(PY) -m pytest -q -m cuda $(ARGS)

# Slurm tests only, against the single-node test cluster (scripts/slurm_cluster.sh start; as root).
test-slurm: $(SETUP)
	$(PY) -m pytest -q tests/test_slurm.py $(ARGS)

# Rewrite the golden pack trees in tests/golden/ after an intended change; review the diff.
golden: $(SETUP)
	$(PY) -m tests.golden_update

# Benchmarks print numbers; they never fail on time. N="1 10" picks the course sizes (default 1 10 100 1000).
bench: $(SETUP)
	$(PY) bench/build_bench.py $(N)

$(VENV)/.installed: pyproject.toml requirements/lock.txt
	python3 -m venv $(VENV)
	$(VENV)/bin/python -m pip install -q --upgrade pip
	$(VENV)/bin/python -m pip install -q -r requirements/lock.txt
	$(VENV)/bin/python -m pip install -q --no-deps -e .
	touch $@

clean:
	rm -rf build/dist build/dist.new build/dist.old build/work build/report.json build/report.md

distclean:
	rm -rf build $(VENV)

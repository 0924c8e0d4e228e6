# The two set-up commands of the README: `make run` and `make test`. Each
# creates (or reuses) the virtual environment in .venv and installs the pinned
# packages of requirements.lock before it does its job.

VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
# Cores for snakemake: all the machine's unless set (make run CORES=2).
CORES ?= all
CONFIG ?= config/config.yaml
# Extra snakemake flags for every target, e.g. SNAKEMAKE_FLAGS=--dry-run (the README test uses it).
SNAKEMAKE_FLAGS ?=

.PHONY: run test lint format test-all dry-run base-model reference-model select-lr report docs clean

$(STAMP): pyproject.toml requirements.lock
	python3 -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -r requirements.lock
	$(PY) -m pip install --quiet --no-deps --no-build-isolation -e .
	touch $(STAMP)

run: $(STAMP)  ## the whole pipeline on the embedded default config
	$(VENV)/bin/snakemake $(SNAKEMAKE_FLAGS) --cores $(CORES) --configfile $(CONFIG)
	@echo "Tables and plots: results/$$($(PY) -c "import yaml;print(yaml.safe_load(open('$(CONFIG)')).get('run','default'))")/aggregate/"

# Test processes (pytest-xdist): one per core unless set (make test WORKERS=0 runs them in this one).
WORKERS ?= auto
test: $(STAMP) lint  ## lint, then unit, stage, DAG and micro end-to-end tests (what CI runs); the 15 slowest listed (budget: 8 min)
	$(PY) -m pytest -m "not slow and not cluster" -n $(WORKERS) --dist worksteal --durations=15

lint: $(STAMP)  ## ruff's lint and format check (configured in pyproject.toml)
	$(VENV)/bin/ruff check
	$(VENV)/bin/ruff format --check

format: $(STAMP)  ## ruff's fixes and formatting, in place
	$(VENV)/bin/ruff check --fix
	$(VENV)/bin/ruff format

test-all: $(STAMP)  ## everything, including the full default run
	$(PY) -m pytest

dry-run: $(STAMP)
	$(VENV)/bin/snakemake $(SNAKEMAKE_FLAGS) -n --cores $(CORES) --configfile $(CONFIG)

base-model: $(STAMP)  ## rebuild the shipped base model under resources/models/
	$(VENV)/bin/snakemake $(SNAKEMAKE_FLAGS) pretrain_base_model --forcerun pretrain_base_model --cores $(CORES) --configfile $(CONFIG)

reference-model: $(STAMP)  ## rebuild Ref's shipped reference model under resources/models/
	$(VENV)/bin/snakemake $(SNAKEMAKE_FLAGS) pretrain_reference_model --forcerun pretrain_reference_model --cores $(CORES) --configfile $(CONFIG)

select-lr: $(STAMP)  ## the LoRA learning rate by the rule in config.yaml (no detector, no membership label)
	$(VENV)/bin/snakemake $(SNAKEMAKE_FLAGS) learning_rate_selection --cores $(CORES) --configfile $(CONFIG)

report: $(STAMP)
	$(VENV)/bin/snakemake $(SNAKEMAKE_FLAGS) --cores $(CORES) --configfile $(CONFIG) --report results/report.html

docs: $(STAMP)  ## the documentation site, offline, into site/ (open site/index.html)
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs build --strict

clean:
	rm -rf results .snakemake

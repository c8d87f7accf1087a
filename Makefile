# The same commands run locally and in CI (.ci/run calls `make test`).
SHELL := /bin/bash
VENV ?= .venv
PY := $(VENV)/bin/python
PIP := $(VENV)/bin/pip
STAMP := $(VENV)/.installed
BASE_PYTHON ?= $(shell command -v python3.11 >/dev/null 2>&1 && python3.11 -c 'import sys;print(sys.executable)' || python3 -c 'import sys;print(sys.executable)')

.PHONY: install run test lint typecheck format bench clean system-deps

system-deps:
	@scripts/system-deps.sh

$(STAMP): pyproject.toml
	@$(MAKE) --no-print-directory system-deps
	$(BASE_PYTHON) -m venv $(VENV)
	$(PIP) install -q --upgrade pip
	$(PIP) install -q -e '.[dev]'
	touch $(STAMP)

install: $(STAMP)

run: install
	$(PY) -m scripts.stack

test: install
	$(PY) -m pytest

lint: install
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

typecheck: install
	$(VENV)/bin/mypy

format: install
	$(VENV)/bin/ruff format .
	$(VENV)/bin/ruff check --fix .

bench: install
	$(PY) -m toolkit.bench all

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache build *.egg-info

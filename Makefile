# The same commands run locally and in CI (.ci/run calls `make test`).
SHELL := /bin/bash
VENV ?= .venv
PY := $(VENV)/bin/python
PIP := $(VENV)/bin/pip
STAMP := $(VENV)/.installed
BASE_PYTHON ?= $(shell command -v python3.11 >/dev/null 2>&1 && python3.11 -c 'import sys;print(sys.executable)' || python3 -c 'import sys;print(sys.executable)')

.PHONY: install run test test-verl lint typecheck format bench clean system-deps

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
	@scripts/system-deps.sh --test
	$(PY) -m pytest

# The verl tool contract against the real verl package (CPU torch), in a separate venv.
VERL_VENV ?= .venv-verl
test-verl:
	$(BASE_PYTHON) -m venv $(VERL_VENV)
	$(VERL_VENV)/bin/pip install -q --upgrade pip
	$(VERL_VENV)/bin/pip install -q torch==2.13.0
	$(VERL_VENV)/bin/pip install -q --no-deps verl
	$(VERL_VENV)/bin/pip install -q numpy packaging pydantic omegaconf ray 'tensordict==0.10.0' \
		'transformers>=5.5.3,<5.11,!=5.6.0' aiohttp pytest pyyaml
	PYTHONPATH=. $(VERL_VENV)/bin/python -m pytest -q --noconftest tests/test_toolkit_unit.py

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

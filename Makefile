# The same commands run locally and in CI (.ci/run calls `make test`).
SHELL := /bin/bash
VENV ?= .venv
PY := $(VENV)/bin/python
PIP := $(VENV)/bin/pip
STAMP := $(VENV)/.installed
# Exact versions of everything installed (README, "Upgrading dependencies"); `make lock` rewrites it.
CONSTRAINTS := constraints.txt
BASE_PYTHON ?= $(shell command -v python3.11 >/dev/null 2>&1 && python3.11 -c 'import sys;print(sys.executable)' || python3 -c 'import sys;print(sys.executable)')

.PHONY: install run test test-min test-verl lint typecheck format bench soak clean system-deps lock

system-deps:
	@scripts/system-deps.sh

$(STAMP): pyproject.toml $(CONSTRAINTS)
	@$(MAKE) --no-print-directory system-deps
	$(BASE_PYTHON) -m venv $(VENV)
	$(PIP) install -q -c $(CONSTRAINTS) pip
	$(PIP) install -q -c $(CONSTRAINTS) -e '.[dev]'
	touch $(STAMP)

install: $(STAMP)

run: install
	$(PY) -m scripts.stack

test: install
	@scripts/system-deps.sh --test
	$(PY) -m pytest

# The lower bounds of pyproject.toml, tested: a fresh venv with every runtime dependency at its
# minimum (scripts/lower_bounds.py; their own dependencies resolve freely), the test tools from the
# lock, then the contract, unit, API and fault tests on both transport paths.
MIN_VENV ?= .venv-min
MIN_TESTS ?= tests/test_transport_contract.py tests/test_transport_packed.py tests/test_transport.py \
	tests/test_results.py tests/test_units.py tests/test_api.py tests/test_judge_tests.py tests/test_faults.py \
	tests/test_flower.py tests/test_metrics.py
test-min:
	@scripts/system-deps.sh --test
	rm -rf $(MIN_VENV)
	$(BASE_PYTHON) -m venv $(MIN_VENV)
	$(MIN_VENV)/bin/pip install -q -c $(CONSTRAINTS) pip
	$(BASE_PYTHON) scripts/lower_bounds.py > $(MIN_VENV)/lower-bounds.txt
	$(MIN_VENV)/bin/pip install -q -c $(MIN_VENV)/lower-bounds.txt -e . \
		$$(grep -iE '^(pytest|pytest-timeout|pluggy|iniconfig)==' $(CONSTRAINTS))
	$(MIN_VENV)/bin/pip freeze --exclude-editable > $(MIN_VENV)/installed.txt
	$(MIN_VENV)/bin/python -m pytest -p no:cacheprovider -q $(MIN_TESTS)

# Re-resolve the newest versions pyproject.toml allows into constraints.txt (then: make install test).
LOCK_VENV ?= .venv-lock
lock:
	rm -rf $(LOCK_VENV)
	$(BASE_PYTHON) -m venv $(LOCK_VENV)
	$(LOCK_VENV)/bin/pip install -q --upgrade pip
	$(LOCK_VENV)/bin/pip install -q -e '.[dev]'
	{ sed -n '1,2p' $(CONSTRAINTS); $(LOCK_VENV)/bin/pip freeze --all --exclude-editable | sort -f; } > $(CONSTRAINTS).new
	mv $(CONSTRAINTS).new $(CONSTRAINTS)
	rm -rf $(LOCK_VENV)

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

# 45,000 trivial submissions the way an RL step sends them, against a private stack on free ports
# (its own Redis, worker, gateway): every answer checked, peak RSS per component, Redis memory
# before/after.  Not part of `make test`.  SOAK_N / SOAK_ARGS override the size and bench options.
SOAK_N ?= 45000
SOAK_ARGS ?= --senders 16 --per-request 32 --agents 1024
soak: install
	@scripts/system-deps.sh --test
	@set -euo pipefail; mkdir -p .run; \
	ports=($$($(PY) -c 'from scripts.stack import free_port; print(free_port(), free_port(), free_port())')); \
	env -u REDIS_URI JUDGE_GATEWAY_PORT=$${ports[0]} JUDGE_FLOWER_PORT=$${ports[1]} JUDGE_REDIS_PORT=$${ports[2]} \
		$(PY) -m scripts.stack > .run/soak-stack.log 2>&1 & stack=$$!; \
	trap 'kill -TERM $$stack; wait $$stack || true' EXIT; \
	$(PY) -c "from scripts.stack import wait_port; wait_port($${ports[0]}, 60)"; \
	$(PY) -m toolkit.bench soak --url http://127.0.0.1:$${ports[0]} --n $(SOAK_N) $(SOAK_ARGS) \
		--cpu --cpu-root $$stack --redis-url redis://127.0.0.1:$${ports[2]}/0

clean:
	rm -rf $(VENV) $(MIN_VENV) .pytest_cache .mypy_cache .ruff_cache build *.egg-info

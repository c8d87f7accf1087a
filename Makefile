# The same commands run locally and in CI (.ci/run calls `make test`).
SHELL := /bin/bash
VENV ?= .venv
PY := $(VENV)/bin/python
PIP := $(VENV)/bin/pip
STAMP := $(VENV)/.installed
# Exact versions of everything installed (docs/upgrading.md); `make lock` rewrites it.
CONSTRAINTS := constraints.txt
BASE_PYTHON ?= $(shell command -v python3.11 >/dev/null 2>&1 && python3.11 -c 'import sys;print(sys.executable)' || python3 -c 'import sys;print(sys.executable)')

.PHONY: install runtime run test test-unit test-min test-stock test-deploy test-scale test-faults test-broker-faults test-image test-verl test-rlinf test-doors test-client lint typecheck format bench soak clean system-deps lock

system-deps:
	@scripts/system-deps.sh

$(STAMP): pyproject.toml $(CONSTRAINTS)
	@$(MAKE) --no-print-directory system-deps
	$(BASE_PYTHON) -m venv $(VENV)
	$(PIP) install -q -c $(CONSTRAINTS) pip
	$(PIP) install -q -c $(CONSTRAINTS) -e '.[dev]'
	touch $(STAMP)

install: $(STAMP)

# The submission runtime (judge/runtime/requirements.txt): built once per set of pins, operator
# requirements and modules (JUDGE_RUNTIME_*), under /opt/judge-runtime; a fast no-op when built.
runtime: install
	@$(PY) -m judge.runtime.build

run: install runtime
	$(PY) -m judge.stack

# The whole suite, by layer under tests/ (unit, sandbox, integration, system, frameworks); the 20 slowest
# tests are listed at the end, to keep the suite within its 10 minutes.
test: install runtime
	@scripts/system-deps.sh --test
	$(PY) -m pytest --durations=20

# The unit layer alone: no redis-server, worker, gateway or slot server, nor the submission runtime;
# well under a minute.
test-unit: install
	$(PY) -m pytest tests/unit

# The end-to-end tests marked both_paths (API, /judge/tests, tracing, faults, the attack suite), on
# the stock path (JUDGE_TRANSPORT=stock) alone.
test-stock: install runtime
	@scripts/system-deps.sh --test
	JUDGE_TEST_PATHS=stock $(PY) -m pytest -m both_paths tests/integration tests/system

# The deploy recipe run whole on this machine over loopback: deploy/master.sh and two worker nodes
# (worker.sh; the systemd units' ExecStart), the HumanEval-style check, a node SIGKILLed mid-load.
# About a minute; root.  Not part of `make test`.
test-deploy: install
	@scripts/system-deps.sh --test
	JUDGE_TEST_DEPLOY=1 $(PY) -m pytest tests/system/test_deploy_cluster.py

# Scaling out: two broker shards with a worker each on both transport paths, one killed mid-load
# (test_shards.py); several gateway processes under one in-flight cap, one of them SIGKILLed
# (test_gateways.py); two worker nodes on one Redis, one warm-shut-down mid-batch (test_multinode.py);
# several worker instances on one node (test_instances.py); a live session's node SIGKILLed mid-cell
# (test_session_failover.py).  About three minutes; not part of `make test`.
test-scale: install runtime
	@scripts/system-deps.sh --test
	JUDGE_TEST_SCALE=1 $(PY) -m pytest tests/system/test_shards.py tests/system/test_gateways.py \
		tests/system/test_multinode.py tests/system/test_instances.py tests/system/test_session_failover.py

# Faults of the judge's own processes on private stacks (tests/system/test_faults.py): a pool process
# and the worker's main process killed mid-batch, a warm shutdown, Redis restarted under a small
# batch, a client that disconnects, on both transport paths.  About two minutes; not part of `make test`.
test-faults: install runtime
	@scripts/system-deps.sh --test
	JUDGE_TEST_FAULTS=1 JUDGE_TEST_PATHS=fast,stock $(PY) -m pytest tests/system/test_faults.py

# Broker faults under load (tests/system/test_broker_faults.py): Redis killed and restarted empty, a
# Sentinel failover to a replica missing the tail, Redis paused past the client timeouts; each on both
# transport paths with a batch of 500 and /run calls in flight.  About four minutes; not part of
# `make test` (`make test-faults` restarts Redis under a small batch, tests/system/test_faults.py).
test-broker-faults: install runtime
	@scripts/system-deps.sh --test
	JUDGE_TEST_BROKER_FAULTS=1 $(PY) -m pytest tests/system/test_broker_faults.py

# The container recipe without a container engine: a debootstrapped Debian base (kept in
# JUDGE_IMAGE_BASE, default /var/tmp/judge-rootfs-bookworm), deploy/Dockerfile's steps carried out
# in a chroot, the stack run from it over loopback.  Minutes; root, Debian's archive and PyPI.
test-image: install
	@command -v debootstrap >/dev/null || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq debootstrap >/dev/null; }
	JUDGE_TEST_IMAGE=1 $(PY) -m pytest tests/system/test_image.py

# Framework tests, each in its own cached virtualenv built from frozen pins (scripts/framework-venv.sh
# rebuilds one only when its pins change).  The venvs hold the client and a framework, not the
# server: the real stack under test runs with $(PY).  Ray, Hugging Face and friends write under a
# private HOME in .run/.
FRAMEWORK_ENV = HOME=$(CURDIR)/.run/framework-home PYTHONPATH=$(CURDIR) JUDGE_SERVER_PYTHON=$(CURDIR)/$(PY)
FRAMEWORK_PYTEST = -m pytest -p no:cacheprovider -q

# verl: 0.9.1 (newest) and 0.5.0 (oldest supported: str-returning tool API) through their real
# initialize_tools_from_config; 0.9.1 also through its real ToolAgentLoop; both versions' SandboxFusion
# reward (and 0.5.0's SandboxFusionTool) against the SandboxFusion door.
VERL_VERSIONS ?= 0.9.1 0.5.0
test-verl: install
	@scripts/system-deps.sh --test
	@mkdir -p .run/framework-home
	@set -e; for v in $(VERL_VERSIONS); do \
		scripts/framework-venv.sh .venv-verl-$$v tests/frameworks/requirements/verl-$$v.txt $(BASE_PYTHON); \
		$(FRAMEWORK_ENV) VERL_EXPECT=$$v .venv-verl-$$v/bin/python $(FRAMEWORK_PYTEST) \
			tests/frameworks/test_verl.py tests/frameworks/test_verl_sandboxfusion.py tests/unit/toolkit; \
	done

# RLinf 0.3.0 on a private local CPU-only Ray: its Cluster, worker groups and Channels.
RLINF_VENV ?= .venv-rlinf-0.3.0
test-rlinf: install
	@scripts/system-deps.sh --test
	@mkdir -p .run/framework-home
	scripts/framework-venv.sh $(RLINF_VENV) tests/frameworks/requirements/rlinf-0.3.0.txt $(BASE_PYTHON)
	$(FRAMEWORK_ENV) $(RLINF_VENV)/bin/python $(FRAMEWORK_PYTEST) tests/frameworks/test_rlinf.py

# The compatible doors' own client SDKs from PyPI (sandbox-fusion, judge0, pistonpy) in their own cached
# venv, against the real stack run with $(PY).
DOORS_VENV ?= .venv-doors
test-doors: install
	@scripts/system-deps.sh --test
	@mkdir -p .run/framework-home
	scripts/framework-venv.sh $(DOORS_VENV) tests/frameworks/requirements/doors-sdks.txt $(BASE_PYTHON)
	$(FRAMEWORK_ENV) $(DOORS_VENV)/bin/python $(FRAMEWORK_PYTEST) tests/frameworks/test_door_sdks.py

# The client distribution (client/pyproject.toml) alone in a fresh venv: no server package may be
# present, and the toolkit's tests run against a real gateway with `toolkit` imported from the wheel
# (pytest's console script and --import-mode=append keep the checkout's toolkit/ off the front of sys.path).
CLIENT_VENV ?= .venv-client
test-client: install
	@scripts/system-deps.sh --test
	rm -rf $(CLIENT_VENV)
	$(BASE_PYTHON) -m venv $(CLIENT_VENV)
	$(CLIENT_VENV)/bin/pip install -q './client[test]'
	JUDGE_CLIENT_ONLY=1 JUDGE_SERVER_PYTHON=$(CURDIR)/$(PY) $(CLIENT_VENV)/bin/pytest -p no:cacheprovider -q \
		--import-mode=append tests/frameworks/test_client.py tests/unit/toolkit tests/integration/toolkit/test_toolkit.py

# The lower bounds of pyproject.toml, tested: a fresh venv with every runtime dependency at its
# minimum (scripts/lower_bounds.py; their own dependencies resolve freely), the test tools from the
# lock, then the contract, unit, API and fault tests on both transport paths.
MIN_VENV ?= .venv-min
MIN_TESTS ?= tests/unit/transport tests/unit/worker tests/unit/verdicts \
	tests/unit/test_settings.py tests/unit/api/test_contracts.py \
	tests/unit/sandbox/test_lean_imports.py tests/unit/sandbox/test_errors.py tests/unit/sandbox/test_execute.py \
	tests/integration/transport tests/integration/test_api.py tests/integration/test_judge_tests.py \
	tests/system/test_faults.py tests/integration/test_flower.py tests/integration/test_metrics.py
test-min:
	@scripts/system-deps.sh --test
	rm -rf $(MIN_VENV)
	$(BASE_PYTHON) -m venv $(MIN_VENV)
	$(MIN_VENV)/bin/pip install -q -c $(CONSTRAINTS) pip
	$(BASE_PYTHON) scripts/lower_bounds.py > $(MIN_VENV)/lower-bounds.txt
	$(MIN_VENV)/bin/pip install -q -c $(MIN_VENV)/lower-bounds.txt -e . \
		$$(grep -iE '^(pytest|pytest-timeout|pluggy|iniconfig)==' $(CONSTRAINTS))
	$(MIN_VENV)/bin/pip freeze --exclude-editable > $(MIN_VENV)/installed.txt
	JUDGE_TEST_FAULTS=1 $(MIN_VENV)/bin/python -m pytest -p no:cacheprovider -q $(MIN_TESTS)

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
	ports=($$($(PY) -c 'from judge.stack import free_port; print(free_port(), free_port(), free_port())')); \
	env -u REDIS_URI JUDGE_GATEWAY_PORT=$${ports[0]} JUDGE_FLOWER_PORT=$${ports[1]} JUDGE_REDIS_PORT=$${ports[2]} \
		$(PY) -m judge.stack > .run/soak-stack.log 2>&1 & stack=$$!; \
	trap 'kill -TERM $$stack; wait $$stack || true' EXIT; \
	$(PY) -c "from judge.stack import wait_port; wait_port($${ports[0]}, 60)"; \
	$(PY) -m toolkit.bench soak --url http://127.0.0.1:$${ports[0]} --n $(SOAK_N) $(SOAK_ARGS) \
		--cpu --cpu-root $$stack --redis-url redis://127.0.0.1:$${ports[2]}/0

clean:
	rm -rf $(VENV) $(MIN_VENV) .venv-verl-* .venv-rlinf-* $(DOORS_VENV) $(CLIENT_VENV) .pytest_cache .mypy_cache .ruff_cache build *.egg-info

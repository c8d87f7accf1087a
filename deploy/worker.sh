#!/usr/bin/env bash
# A worker node of the upstream rStar2-Agent recipe: `celery -A judge worker` instance(s) that take
# work from the master's Redis.  Run as root for real isolation (deploy/README.md "Sandbox tiers").
set -euo pipefail

usage() {
    cat <<'EOF'
usage: deploy/worker.sh [-i INSTANCES] [-c MAX_WORKERS] [-l LOGLEVEL]

Starts INSTANCES `celery -A judge worker` processes on this node, in the foreground, named
judge-1@<hostname>, judge-2@<hostname>, ...; each has MAX_WORKERS pool processes.  SIGTERM or
Ctrl-C is a warm shutdown: running submissions finish first.

  -i N        worker instances (JUDGE_WORKER_INSTANCES, 1); on big nodes one per 8-16 processes
  -c N        pool processes per instance (MAX_WORKERS); default: the CPU count divided by N
  -l LEVEL    Celery log level (INFO)

Environment (deploy/judge.env.example lists all of it):
  REDIS_URI             the master's Redis, e.g. redis://10.0.0.1:6379/0 (required)
  JUDGE_PYTHON          Python with the judge installed (python3)
  MAX_EXECUTION_TIME ... read by the worker (judge/settings.py); must match the gateway's
  JUDGE_RUNTIME_*       the submission runtime's root, extra requirements and operator modules;
                        built (or found) before the worker starts

Example (rStar2-Agent's worker nodes: 64 processes each):
  REDIS_URI=redis://$MASTER_ADDR:6379/0 MAX_EXECUTION_TIME=4 deploy/worker.sh -i 4 -c 16
EOF
}

python=${JUDGE_PYTHON:-python3}
instances=${JUDGE_WORKER_INSTANCES:-1}
processes=${MAX_WORKERS:-0}
loglevel=INFO

while [ $# -gt 0 ]; do
    case "$1" in
        -i) instances=${2:?-i needs a number}; shift 2 ;;
        -c) processes=${2:?-c needs a number}; shift 2 ;;
        -l) loglevel=${2:?-l needs a level}; shift 2 ;;
        -h | --help) usage; exit 0 ;;
        *) echo "worker.sh: unknown argument: $1" >&2; usage >&2; exit 2 ;;
    esac
done

if [ -z "${REDIS_URI:-}" ]; then
    echo "worker.sh: set REDIS_URI to the master's Redis (redis://<master>:6379/0)" >&2
    usage >&2
    exit 2
fi
case "$instances$processes" in
    *[!0-9]*) echo "worker.sh: -i and -c take whole numbers" >&2; exit 2 ;;
esac
if [ "$instances" -lt 1 ]; then
    echo "worker.sh: -i must be at least 1" >&2
    exit 2
fi
if [ "$processes" -eq 0 ]; then
    processes=$(( ($(nproc) + instances - 1) / instances ))
fi
if ! "$python" -c 'import judge, celeryconfig' 2>/dev/null; then
    echo "worker.sh: $python cannot import the judge; set JUDGE_PYTHON to the venv's python" >&2
    exit 1
fi
if [ "$(id -u)" != 0 ]; then
    echo "worker.sh: not root: only the 'none' sandbox tier is possible (needs JUDGE_ALLOW_UNSAFE=1)" >&2
fi
export MAX_WORKERS=$processes

# The submission runtime (README "Submission runtime"): built once from the pins and the operator's
# JUDGE_RUNTIME_REQUIREMENTS / JUDGE_RUNTIME_MODULES, found again at once on later starts.
if ! "$python" -m judge.runtime.build; then
    echo "worker.sh: the submission runtime could not be built (see above)" >&2
    exit 1
fi

# Node names: Celery expands %h to this host's name; they must be unique in the cluster.
if [ "$instances" -eq 1 ]; then
    exec "$python" -m celery -A judge worker -P prefork -c "$processes" -n "judge-1@%h" -l "$loglevel" \
        --without-gossip --without-mingle
fi

pids=()
stop_all() {
    trap - EXIT INT TERM
    # Warm shutdown of every instance, then wait for all of them.
    for pid in "${pids[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
    wait || true
}
trap stop_all EXIT
trap 'exit 143' INT TERM

for i in $(seq 1 "$instances"); do
    "$python" -m celery -A judge worker -P prefork -c "$processes" -n "judge-$i@%h" -l "$loglevel" \
        --without-gossip --without-mingle &
    pids+=($!)
done
echo "worker.sh: $instances instances x $processes pool processes" >&2

# One instance exiting (crash, or killed) stops the node's set, so a supervisor can restart it.
wait -n
echo "worker.sh: a worker instance exited; stopping the others" >&2
exit 1

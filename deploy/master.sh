#!/usr/bin/env bash
# The master node of the upstream rStar2-Agent recipe: Redis (unless REDIS_URI points elsewhere),
# the gateway (`uvicorn api.main:app --workers N`) and Flower.  Worker nodes run deploy/worker.sh.
set -euo pipefail

usage() {
    cat <<'EOF'
usage: deploy/master.sh [-w GATEWAY_WORKERS] [-s SHARDS] [-H HOST] [-p PORT] [--no-redis] [--no-flower]

Starts on this node, in the foreground (Ctrl-C or SIGTERM stops everything it started):
  * redis-server on JUDGE_REDIS_HOST:JUDGE_REDIS_PORT (0.0.0.0:6379), unless REDIS_URI or
    JUDGE_BROKER_SHARDS is set or --no-redis is given; worker nodes then use
    REDIS_URI=redis://<this host>:6379/0.  With -s N, N of them (broker shards) on N ports from
    JUDGE_REDIS_PORT, and worker nodes use the JUDGE_BROKER_SHARDS this script prints
  * the gateway: judge-gateway (uvicorn api.main:app) with GATEWAY_WORKERS (4) processes on one
    port, HOST:PORT (0.0.0.0:8088), their metrics shared through PROMETHEUS_MULTIPROC_DIR
  * Flower on JUDGE_FLOWER_HOST:JUDGE_FLOWER_PORT (127.0.0.1:5555), one per broker shard on the
    ports from there, unless --no-flower

Options override the environment:
  -w N        gateway processes (GATEWAY_WORKERS)
  -s N        broker shards: Redis instances started here (JUDGE_REDIS_SHARDS, 1)
  -H HOST     gateway address (JUDGE_GATEWAY_HOST)
  -p PORT     gateway port (JUDGE_GATEWAY_PORT)

Environment (deploy/judge.env.example lists all of it):
  REDIS_URI             an existing Redis; when unset, this script starts one
  JUDGE_BROKER_SHARDS   existing Redis instances (comma-separated) to use as broker shards
  JUDGE_REDIS_PASSWORD  password for the Redis started here (then redis://:<password>@host:port/0)
  JUDGE_PYTHON          Python with the judge installed (python3)
  MAX_EXECUTION_TIME ... read by the gateway (judge/settings.py); must match the workers'

Example (rStar2-Agent's master):
  MAX_EXECUTION_TIME=4 deploy/master.sh -w 16
EOF
}

python=${JUDGE_PYTHON:-python3}
workers=${GATEWAY_WORKERS:-4}
redis_shards=${JUDGE_REDIS_SHARDS:-1}
host=${JUDGE_GATEWAY_HOST:-0.0.0.0}
port=${JUDGE_GATEWAY_PORT:-8088}
redis_host=${JUDGE_REDIS_HOST:-0.0.0.0}
redis_port=${JUDGE_REDIS_PORT:-6379}
flower_host=${JUDGE_FLOWER_HOST:-127.0.0.1}
flower_port=${JUDGE_FLOWER_PORT:-5555}
start_redis=1
start_flower=1

while [ $# -gt 0 ]; do
    case "$1" in
        -w) workers=${2:?-w needs a number}; shift 2 ;;
        -s) redis_shards=${2:?-s needs a number}; shift 2 ;;
        -H) host=${2:?-H needs an address}; shift 2 ;;
        -p) port=${2:?-p needs a port}; shift 2 ;;
        --no-redis) start_redis=0; shift ;;
        --no-flower) start_flower=0; shift ;;
        -h | --help) usage; exit 0 ;;
        *) echo "master.sh: unknown argument: $1" >&2; usage >&2; exit 2 ;;
    esac
done

if ! "$python" -c 'import judge, api' 2>/dev/null; then
    echo "master.sh: $python cannot import the judge; set JUDGE_PYTHON to the venv's python" >&2
    exit 1
fi

pids=()
stop_all() {
    trap - EXIT INT TERM
    for pid in "${pids[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
    wait || true
}
trap stop_all EXIT
trap 'exit 143' INT TERM

wait_port() {  # host port seconds
    local deadline=$((SECONDS + $3))
    until (exec 3<>"/dev/tcp/$1/$2") 2>/dev/null; do
        if [ "$SECONDS" -ge "$deadline" ]; then
            echo "master.sh: nothing listens on $1:$2 after $3 s" >&2
            return 1
        fi
        sleep 0.2
    done
}

case "$redis_shards" in
    '' | *[!0-9]* | 0*) echo "master.sh: -s takes a whole number >= 1" >&2; exit 2 ;;
esac
if [ -z "${REDIS_URI:-}" ] && [ -z "${JUDGE_BROKER_SHARDS:-}" ] && [ "$start_redis" = 1 ]; then
    command -v redis-server >/dev/null || { echo "master.sh: redis-server is not installed" >&2; exit 1; }
    if [ "$redis_host" != 127.0.0.1 ] && [ -z "${JUDGE_REDIS_PASSWORD:-}" ]; then
        echo "master.sh: Redis on $redis_host has no password; firewall it or set JUDGE_REDIS_PASSWORD" >&2
    fi
    urls=() public=()
    for k in $(seq 0 $((redis_shards - 1))); do
        shard_port=$((redis_port + k))
        # A work queue, not a database: no snapshots, no AOF.  The password travels on stdin, not argv.
        if [ -n "${JUDGE_REDIS_PASSWORD:-}" ]; then
            printf 'requirepass "%s"\n' "$JUDGE_REDIS_PASSWORD" |
                redis-server - --bind "$redis_host" --port "$shard_port" --save '' --appendonly no &
            urls+=("redis://:${JUDGE_REDIS_PASSWORD}@127.0.0.1:${shard_port}/0")
            public+=("redis://:<password>@<this host>:${shard_port}/0")
        else
            redis-server --bind "$redis_host" --port "$shard_port" --save '' --appendonly no --protected-mode no &
            urls+=("redis://127.0.0.1:${shard_port}/0")
            public+=("redis://<this host>:${shard_port}/0")
        fi
        pids+=($!)
        wait_port 127.0.0.1 "$shard_port" 20
    done
    export REDIS_URI=${urls[0]}
    if [ "$redis_shards" -gt 1 ]; then
        JUDGE_BROKER_SHARDS=$(IFS=,; echo "${urls[*]}")
        export JUDGE_BROKER_SHARDS
        echo "master.sh: $redis_shards broker shards; workers use JUDGE_BROKER_SHARDS=$(IFS=,; echo "${public[*]}")"
    else
        echo "master.sh: redis-server on $redis_host:$redis_port; workers use REDIS_URI=${public[0]}"
    fi
fi
shard_count=$(printf '%s\n' "${JUDGE_BROKER_SHARDS:-}" | tr ', \t' '\n\n\n' | grep -c . || true)
if [ "$shard_count" -lt 1 ]; then shard_count=1; fi

# Several gateway processes on one port (judge-gateway, i.e. uvicorn --workers N): /metrics
# aggregates them through prometheus_client's multiprocess mode (PROMETHEUS_MULTIPROC_DIR, emptied
# first; a private temporary one when unset); the in-flight cap and /status are shared through Redis.
"$python" -m api --host "$host" --port "$port" --workers "$workers" &
pids+=($!)

# Flower watches one broker: one per shard, on consecutive ports.
if [ "$start_flower" = 1 ]; then
    for k in $(seq 0 $((shard_count - 1))); do
        JUDGE_WORKER_SHARD=$k "$python" -m celery -A judge flower --address="$flower_host" --port=$((flower_port + k)) &
        pids+=($!)
    done
fi

probe_host=$host
if [ "$probe_host" = 0.0.0.0 ]; then probe_host=127.0.0.1; fi
wait_port "$probe_host" "$port" 60
echo "master.sh: gateway http://$host:$port ($workers processes)"

# The first service to exit stops the others.
wait -n
echo "master.sh: a service exited; stopping" >&2
exit 1

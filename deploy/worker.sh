#!/usr/bin/env bash
# A worker node of the upstream rStar2-Agent recipe: `celery -A judge worker` instance(s) that take
# work from the master's Redis.  Run as root for real isolation (deploy/README.md "Sandbox tiers").
set -euo pipefail

usage() {
    cat <<'EOF'
usage: deploy/worker.sh [-i INSTANCES|auto] [-c PROCESSES] [-n NODE] [-l LOGLEVEL]
                        [--plan | --units | --names | --check | --instance I]

Starts the node's `celery -A judge worker` instances in the foreground, named judge-1@NODE,
judge-2@NODE, ...; each has its own pool of PROCESSES processes (= sandbox slots).  SIGTERM or
Ctrl-C is a warm shutdown: running submissions finish first.  With several broker shards
(JUDGE_BROKER_SHARDS), instance I consumes from shard (I - 1) mod SHARDS, and `auto` runs at least
one instance per shard, so every node serves every shard.

  -i N|auto   worker instances (JUDGE_WORKER_INSTANCES, default auto: see below)
  -c N        pool processes per instance (MAX_WORKERS); default: the node's cores split evenly
  -n NODE     host part of the node names (JUDGE_NODE_NAME, default %h: Celery's host name)
  -l LEVEL    Celery log level (INFO)
  --plan      print the plan (cores, instances, processes of each) and exit
  --units     print the systemd units of the plan (judge-worker@1.service ...) and exit
  --names     print the node names of the plan, comma-separated (for `celery inspect -d`) and exit
  --check     exit 0 only if every instance of the plan answers a ping (container healthcheck)
  --instance I  run only instance I of the plan, in place (systemd's judge-worker@I.service)

The rule (deploy/README.md "Worker instances per node"): one worker's main process (its consumer)
is serial, so with `auto` a node runs one instance per JUDGE_PROCESSES_PER_INSTANCE (4) pool
processes: instances = ceil(processes / 4), where processes = the node's cores (JUDGE_NODE_CORES,
default: `nproc`, capped by the cgroup CPU quota) unless -c fixes the size of each instance.

Environment (deploy/judge.env.example lists all of it):
  REDIS_URI             the master's Redis, e.g. redis://10.0.0.1:6379/0 (required, unless:)
  JUDGE_BROKER_SHARDS   several Redis (broker shards), comma-separated, the same list as the gateway's
  JUDGE_WORKER_SHARD    pin every instance to this shard (0-based) instead of spreading them
  JUDGE_PYTHON          Python with the judge installed (python3)
  MAX_EXECUTION_TIME ... read by the worker (judge/settings.py); must match the gateway's
  JUDGE_RUNTIME_*       the submission runtime's root, extra requirements and operator modules;
                        built (or found) before the worker starts

Example (rStar2-Agent's worker nodes, 64 cores: 16 instances of 4 processes each):
  REDIS_URI=redis://$MASTER_ADDR:6379/0 MAX_EXECUTION_TIME=4 deploy/worker.sh
EOF
}

python=${JUDGE_PYTHON:-python3}
instances=${JUDGE_WORKER_INSTANCES:-auto}
processes=${MAX_WORKERS:-0}
per_instance=${JUDGE_PROCESSES_PER_INSTANCE:-4}
node=${JUDGE_NODE_NAME:-%h}
loglevel=INFO
mode=run
only=0

while [ $# -gt 0 ]; do
    case "$1" in
        -i) instances=${2:?-i needs a number or auto}; shift 2 ;;
        -c) processes=${2:?-c needs a number}; shift 2 ;;
        -n) node=${2:?-n needs a name}; shift 2 ;;
        -l) loglevel=${2:?-l needs a level}; shift 2 ;;
        --plan | --units | --names | --check) mode=${1#--}; shift ;;
        --instance) mode=one; only=${2:?--instance needs a number}; shift 2 ;;
        -h | --help) usage; exit 0 ;;
        *) echo "worker.sh: unknown argument: $1" >&2; usage >&2; exit 2 ;;
    esac
done

# Usable cores: the CPUs this process may run on, capped by a cgroup v2 CPU quota (docker --cpus).
node_cores() {
    local cores quota period
    cores=$(nproc)
    if [ -r /sys/fs/cgroup/cpu.max ]; then
        read -r quota period < /sys/fs/cgroup/cpu.max || true
        if [ "${quota:-max}" != max ] && [ "${period:-0}" -gt 0 ]; then
            quota=$(( (quota + period - 1) / period ))
            if [ "$quota" -lt "$cores" ]; then cores=$quota; fi
        fi
    fi
    echo "$cores"
}

cores=${JUDGE_NODE_CORES:-$(node_cores)}
case "$cores$processes$per_instance$only" in
    *[!0-9]*) echo "worker.sh: core, process and instance counts are whole numbers" >&2; exit 2 ;;
esac
if [ "$instances" != auto ]; then
    case "$instances" in
        '' | *[!0-9]* | 0*) echo "worker.sh: -i takes a whole number >= 1 or auto" >&2; exit 2 ;;
    esac
fi
if [ "$cores" -lt 1 ] || [ "$per_instance" -lt 1 ]; then
    echo "worker.sh: JUDGE_NODE_CORES and JUDGE_PROCESSES_PER_INSTANCE must be at least 1" >&2
    exit 2
fi

# Broker shards: how many the gateway spreads over (JUDGE_BROKER_SHARDS), and which one each instance
# consumes from (shards[i-1] for instance i).
shard_count=$(printf '%s\n' "${JUDGE_BROKER_SHARDS:-}" | tr ', \t' '\n\n\n' | grep -c . || true)
if [ "$shard_count" -lt 1 ]; then shard_count=1; fi
pinned=${JUDGE_WORKER_SHARD:-}
case "$pinned" in
    '') ;;
    *[!0-9]*) echo "worker.sh: JUDGE_WORKER_SHARD is a shard index (0-based)" >&2; exit 2 ;;
    *) if [ "$pinned" -ge "$shard_count" ]; then
           echo "worker.sh: JUDGE_WORKER_SHARD=$pinned but there are $shard_count shard(s)" >&2; exit 2
       fi ;;
esac

# The plan: how many instances, and the pool size of each (sizes[i-1] for instance i).
if [ "$instances" = auto ]; then
    if [ "$processes" -gt 0 ]; then
        instances=$(( (cores + processes - 1) / processes ))
    else
        instances=$(( (cores + per_instance - 1) / per_instance ))
    fi
    # Every node serves every shard (unless pinned): a node lost never leaves a shard without consumers.
    if [ -z "$pinned" ] && [ "$instances" -lt "$shard_count" ]; then instances=$shard_count; fi
fi
sizes=()
shards=()
for i in $(seq 1 "$instances"); do
    if [ "$processes" -gt 0 ]; then
        sizes+=("$processes")
    else  # the node's cores split as evenly as possible, at least one process each
        size=$(( cores / instances + (i <= cores % instances ? 1 : 0) ))
        sizes+=($(( size > 0 ? size : 1 )))
    fi
    shards+=("${pinned:-$(( (i - 1) % shard_count ))}")
done

case "$mode" in
    plan) plan="cores=$cores instances=$instances processes=$(IFS=,; echo "${sizes[*]}")"
          if [ "$shard_count" -gt 1 ]; then plan="$plan shards=$(IFS=,; echo "${shards[*]}")"; fi
          echo "$plan"; exit 0 ;;
    units) for i in $(seq 1 "$instances"); do echo "judge-worker@$i.service"; done; exit 0 ;;
esac
host=${node//%h/$(uname -n)}
names=$(seq 1 "$instances" | sed "s/.*/judge-&@$host/" | paste -sd, -)
if [ "$mode" = names ]; then
    echo "$names"
    exit 0
fi
if [ -z "${REDIS_URI:-}" ] && [ -z "${JUDGE_BROKER_SHARDS:-}" ]; then
    echo "worker.sh: set REDIS_URI to the master's Redis (redis://<master>:6379/0), or JUDGE_BROKER_SHARDS" >&2
    usage >&2
    exit 2
fi
if ! "$python" -c 'import judge, celeryconfig' 2>/dev/null; then
    echo "worker.sh: $python cannot import the judge; set JUDGE_PYTHON to the venv's python" >&2
    exit 1
fi
if [ "$mode" = check ]; then  # `inspect ping` succeeds when any node answers: count the answers
    # A ping travels through one broker: ask each shard for the instances that consume from it.
    for shard in $(printf '%s\n' "${shards[@]}" | sort -u); do
        want=0 shard_names=
        for i in $(seq 1 "$instances"); do
            if [ "${shards[$i - 1]}" = "$shard" ]; then
                want=$((want + 1)) shard_names=${shard_names:+$shard_names,}judge-$i@$host
            fi
        done
        JUDGE_WORKER_SHARD=$shard "$python" -m celery -A judge inspect ping -d "$shard_names" --timeout 10 --json \
            2>/dev/null | "$python" -c \
            'import json, sys; sys.exit(len(json.loads(sys.stdin.read() or "{}")) < int(sys.argv[1]))' "$want" ||
            exit 1
    done
    exit 0
fi

if [ "$(id -u)" != 0 ]; then
    echo "worker.sh: not root: only the 'none' sandbox tier is possible (needs JUDGE_ALLOW_UNSAFE=1)" >&2
fi

# The submission runtime (docs/runtime.md): built once from the pins and the operator's
# JUDGE_RUNTIME_REQUIREMENTS / JUDGE_RUNTIME_MODULES, found again at once on later starts (a lock
# makes concurrent starts of several instances build it once).
if [ "$mode" = run ] || [ "$mode" = one ]; then
    if ! "$python" -m judge.runtime.build; then
        echo "worker.sh: the submission runtime could not be built (see above)" >&2
        exit 1
    fi
fi

# Each instance has its own node name (Celery expands %h to the host name; names must be unique in
# the cluster) and its own pool; slot numbers, hence uids, cgroups and work dirs, are host-unique.
if [ "$mode" = run ] && [ "$instances" -eq 1 ]; then
    mode=one only=1
fi
if [ "$mode" = one ]; then
    if [ "$only" -lt 1 ] || [ "$only" -gt "$instances" ]; then
        echo "worker.sh: --instance $only is outside the plan (1..$instances); see --plan" >&2
        exit 2
    fi
    export MAX_WORKERS=${sizes[$only - 1]} JUDGE_WORKER_SHARD=${shards[$only - 1]}
    exec "$python" -m celery -A judge worker -P prefork -c "$MAX_WORKERS" -n "judge-$only@$node" \
        -l "$loglevel" --without-gossip --without-mingle
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
    MAX_WORKERS=${sizes[$i - 1]} JUDGE_WORKER_SHARD=${shards[$i - 1]} "$python" -m celery -A judge worker -P prefork -c "${sizes[$i - 1]}" \
        -n "judge-$i@$node" -l "$loglevel" --without-gossip --without-mingle &
    pids+=($!)
done
echo "worker.sh: $instances instance(s) on $cores cores, pool processes $(IFS=,; echo "${sizes[*]}")," \
    "shards $(IFS=,; echo "${shards[*]}")" >&2

# One instance exiting (crash, or killed) stops the node's set, so a supervisor restarts it whole.
wait -n
echo "worker.sh: a worker instance exited; stopping the others" >&2
exit 1

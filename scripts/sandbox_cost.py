"""The sandbox's own cost per execution, beside a fresh interpreter: `python -m scripts.sandbox_cost`.

Runs a trivial program N times per variant in rounds (so the variants share the machine's noise):
warm and fresh Python through a slot server of each available isolated tier, and a bare
``python3 -I -c`` with no sandbox.  CPU counts the slot server, its children and everything they
reaped.  Needs root for the isolated tiers.
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import time

from judge.sandbox.client import ExecRequest, SlotClient, SlotConfig
from judge.sandbox.limits import Limits
from judge.sandbox.slots import claim_slot
from judge.settings import Settings
from toolkit.bench import cpu_snapshot

SOURCE = 'print(sum(range(10)))'


def _slot_cpu(client: SlotClient) -> dict[int, tuple[str, float]]:
    """CPU seconds of the slot server and every live process below it (zygote, spare...)."""
    assert client._proc is not None
    return cpu_snapshot('', root_pid=client._proc.pid)


def _request(python: str, mode: str) -> ExecRequest:
    limits = Limits(time_s=5)
    if mode == 'warm':
        return ExecRequest(limits=limits, python_source=SOURCE)
    return ExecRequest(limits=limits, argv=[python, '-I', 'source.py'], files={'source.py': SOURCE})


def main() -> int:
    """Print wall and CPU milliseconds per execution for each variant and round."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument('--n', type=int, default=300, help='executions per variant and round')
    parser.add_argument('--rounds', type=int, default=2)
    args = parser.parse_args()
    python = Settings().python_executor_path
    clients: dict[str, SlotClient] = {}
    locks = []
    for tier in ('namespaces', 'landlock'):
        index, fd = claim_slot()
        locks.append(fd)
        client = SlotClient(
            SlotConfig(
                slot=index, python=python, tier=tier, work_root='/tmp/judge-cost', extra={'memory_mb': 256, 'pids': 64}
            )
        )
        try:
            client.ensure_started()
        except Exception as exc:  # a tier this host cannot provide
            sys.stderr.write(f'skipping tier {tier}: {exc}\n')
            continue
        clients[tier] = client
    results: dict[str, list[tuple[float, float]]] = {}
    for _ in range(args.rounds):
        for tier, client in clients.items():
            for mode in ('warm', 'fresh'):
                for _ in range(10):
                    client.run(_request(python, mode))
                cpu0, start = _slot_cpu(client), time.perf_counter()
                for _ in range(args.n):
                    client.run(_request(python, mode))
                wall = (time.perf_counter() - start) / args.n
                cpu1 = _slot_cpu(client)
                cpu_s = sum(cpu1[pid][1] - cpu_s0 for pid, (_, cpu_s0) in cpu0.items() if pid in cpu1)
                results.setdefault(f'{tier} {mode}', []).append((wall, cpu_s / args.n))
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        for _ in range(args.n):
            subprocess.run([python, '-I', '-c', SOURCE], capture_output=True, check=True)
        wall = (time.perf_counter() - start) / args.n
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = (after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime) / args.n
        results.setdefault('no sandbox, fresh python3 -I', []).append((wall, cpu))
    for name, runs in results.items():
        walls = ' / '.join(f'{w * 1000:.2f}' for w, _ in runs)
        cpus = ' / '.join(f'{c * 1000:.2f}' for _, c in runs)
        sys.stdout.write(f'{name:>30}: wall {walls} ms; CPU {cpus} ms\n')
    for client in clients.values():
        client.close()
    for fd in locks:
        os.close(fd)
    return 0


if __name__ == '__main__':
    sys.exit(main())

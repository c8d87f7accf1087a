"""Figures: a C++ <bits/stdc++.h> solution with 10 tests, `/judge/tests` vs 10 separate `/run` calls.

Starts its own stack (redis, one worker with 2 processes, gateway) with an empty compile cache and
measures wall time and the CPU time of the worker's whole process tree (Celery pool, slot servers,
compilers, the programs) for:

1. ``/judge/tests``, cold cache: nothing compiled on the node, not even the <bits/stdc++.h> PCH;
2. ``/judge/tests``, cold binary: a new source, PCH already built;
3. ``/judge/tests``, warm: the same source again;
4. 10 concurrent ``/run`` calls of a new source (PCH built): compiled once thanks to the flock;
5. 10 concurrent ``/run`` calls, warm;
6. 10 concurrent ``/run`` calls of 10 distinct sources: what a judge without a compile cache pays;
7. 10 concurrent ``/run`` calls with an empty cache and no PCH.

Run: ``.venv/bin/python -m tests.integration.bench_compile_once`` (prints a Markdown table).
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time
import uuid
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from tests.support.helpers import post
from tests.support.processes.services import start_gateway, start_redis, start_worker
from tests.support.processes.stack import stack_env

SOLUTION = (
    '#include <bits/stdc++.h>\n'
    'using namespace std;\n'
    '// {tag}\n'
    'int main() {{ long long n; cin >> n; vector<long long> v(n); for (auto &x : v) cin >> x;\n'
    '  sort(v.begin(), v.end()); cout << accumulate(v.begin(), v.end(), 0LL) << "\\n"; }}\n'
)
TESTS = [{'input': f'3\n{i} {i + 1} {i + 2}\n', 'expected_output': str(3 * i + 3)} for i in range(10)]
_CLK = os.sysconf('SC_CLK_TCK')


def _tree_cpu_s(root: int) -> float:
    """utime+stime (+ reaped children) of ``root`` and every live descendant, seconds."""
    children: dict[int, list[int]] = {}
    stats: dict[int, list[str]] = {}
    for name in os.listdir('/proc'):
        if not name.isdigit():
            continue
        try:
            raw = Path(f'/proc/{name}/stat').read_text()
        except OSError:
            continue
        fields = raw[raw.rindex(')') + 2 :].split()
        pid = int(name)
        stats[pid] = fields
        children.setdefault(int(fields[1]), []).append(pid)
    total, todo = 0, [root]
    while todo:
        pid = todo.pop()
        if pid in stats:
            f = stats[pid]
            total += int(f[11]) + int(f[12]) + int(f[13]) + int(f[14])
        todo.extend(children.get(pid, []))
    return total / _CLK


def _measure(worker_pid: int, action: Callable[[], Any]) -> tuple[float, float, Any]:
    cpu0, t0 = _tree_cpu_s(worker_pid), time.monotonic()
    out = action()
    wall = time.monotonic() - t0
    time.sleep(0.3)  # let the slot servers reap their children
    return wall, _tree_cpu_s(worker_pid) - cpu0, out


def main() -> None:
    root = Path(tempfile.mkdtemp(prefix='judge-bench-'))
    redis, port = start_redis(root)
    env = stack_env(f'redis://127.0.0.1:{port}/0', root / 'work')
    worker = start_worker(env, root)
    gateway, url = start_gateway(env, root)
    worker_pid = worker.proc.pid
    rows: list[tuple[str, float, float, str]] = []
    try:
        post(url, '/run', {'type': 'python', 'solution': 'print(1)'})  # both pool processes up

        def judge(tag: str) -> Callable[[], Any]:
            body = {'type': 'cpp', 'solution': SOLUTION.format(tag=tag), 'tests': TESTS}
            return lambda: post(url, '/judge/tests', body, timeout_s=300)

        def runs(tag: str, distinct: bool = False) -> Callable[[], Any]:
            subs = [
                {'type': 'cpp', 'solution': SOLUTION.format(tag=f'{tag}{i}' if distinct else tag), **t}
                for i, t in enumerate(TESTS)
            ]

            def go() -> list[Any]:
                with ThreadPoolExecutor(len(subs)) as pool:
                    return list(pool.map(lambda s: post(url, '/run', s, timeout_s=300), subs))

            return go

        def record(name: str, action: Callable[[], Any]) -> None:
            wall, cpu, out = _measure(worker_pid, action)
            if isinstance(out, dict):
                note = f'{out["verdict"]}, {out["passed"]}/{out["total"]}, compile_cached={out["compile_cached"]}'
            else:
                verdicts = {r['verdict'] for r in out}
                note = f'{verdicts}, compiles={sum(not r.get("compile_cached") for r in out)}'
            rows.append((name, wall, cpu, note))

        tag = uuid.uuid4().hex
        record('/judge/tests, cold cache (no PCH, no binary)', judge(tag))
        record('/judge/tests, cold binary (PCH built)', judge(uuid.uuid4().hex))
        record('/judge/tests, warm', judge(tag))
        tag2 = uuid.uuid4().hex
        record('10 x /run, cold binary (PCH built)', runs(tag2))
        record('10 x /run, warm', runs(tag2))
        record('10 x /run, 10 distinct sources (= compiling every time)', runs(uuid.uuid4().hex, distinct=True))
        for kind in (root / 'work' / 'cache').iterdir():  # empty it (the dirs stay: slots bind-mount them)
            for entry in kind.iterdir():
                shutil.rmtree(entry) if entry.is_dir() else entry.unlink()
        record('10 x /run, cold cache (no PCH, no binary)', runs(uuid.uuid4().hex))
    finally:
        gateway.stop()
        worker.stop()
        redis.stop()
    print('| case | wall s | worker CPU s | result |')
    print('|---|---:|---:|---|')
    for name, wall, cpu, note in rows:
        print(f'| {name} | {wall:.2f} | {cpu:.2f} | {note} |')


if __name__ == '__main__':
    main()

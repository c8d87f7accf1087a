"""CPU: a CPU hog of many processes starving the neighbouring slot.

Each slot has its own group in the cpu controller (`judge.sandbox.kernel.cpushare`): equal weight whatever its
number of processes, and a quota of one CPU over all of them, so a submission's CPU time is bounded by
its wall-clock limit.  The hogs put every process in a session of its own (``setsid``): the kernel's
autogroup would otherwise already group one session's processes.

Each case runs a hog in one slot and, a moment later, an honest CPU-bound program in the other; the
honest program's wall time is compared with the same program run alone just before (relative figures:
the machine is shared), and the hog's slot may not have used more than its quota (cpuacct, read on the
host).
"""

from __future__ import annotations

import statistics
import time
from pathlib import Path

import pytest

from judge.sandbox.kernel import cgroups
from tests.support.attacks.kit import SlotHealth, bash, batch, c, py, report_of, survived

pytestmark = [pytest.mark.integration, pytest.mark.attack, pytest.mark.both_paths]

HONEST = """
import time
time.sleep(P['delay'])
wall, cpu = time.perf_counter(), time.process_time()
x = 0
for i in range(P['n']):
    x += i
report(slot=slot(), wall=time.perf_counter() - wall, cpu=time.process_time() - cpu)
"""

PY_HOG = """
import time
end = time.time() + P['spin']
for _ in range(40):
    if os.fork() == 0:
        os.setsid()  # a session of its own: autogroup would group one session's processes
        while time.time() < end:
            pass
        os._exit(0)
while time.time() < end:
    pass
"""

C_HOG = r"""
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>
static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + t.tv_nsec / 1e9; }
static double end;
static void *spin(void *arg) { volatile unsigned long x = 0; while (now() < end) x++; return arg; }
int main(void) {
    double seconds = 0;
    if (scanf("%lf", &seconds) != 1) return 2;
    end = now() + seconds;
    for (int i = 0; i < WORKERS; i++) {
        if (THREADS) { pthread_t t; pthread_create(&t, NULL, spin, NULL); }
        else if (fork() == 0) { setsid(); spin(NULL); _exit(0); }
    }
    spin(NULL);
    return 0;
}
"""

BASH_HOG = """
for i in $(seq 30); do setsid bash -c 'end=$((SECONDS + 3)); while [ $SECONDS -lt $end ]; do :; done' & done
sleep 2
"""


def _c_hog(threads: bool, spin_s: float) -> dict[str, object]:
    """The C hog; how long it spins comes from stdin, so that a quick first run compiles it."""
    source = f'#define WORKERS {30 if threads else 40}\n#define THREADS {int(threads)}\n{C_HOG}'
    return c(source, stdin=f'{spin_s}')


HOGS = ['python-fork-until-the-time-limit', 'c-fork', 'c-threads', 'bash']


def _hog(name: str, warm_up: bool = False) -> dict[str, object]:
    if name == 'bash':
        return bash(BASH_HOG)
    if name.startswith('c-'):
        return _c_hog(threads=name == 'c-threads', spin_s=0.0 if warm_up else 2.0)
    return py(PY_HOG, spin=10.0)


WORK = 4_000_000  # iterations of the honest loop: a few tenths of a second of CPU


def _cpu_usage_s() -> dict[str, float]:
    """CPU seconds used so far by each slot cpu group on the host (cgroup v1 cpuacct or v2 cpu.stat)."""
    hierarchy = cgroups.detect()
    usage: dict[str, float] = {}
    if hierarchy is None or getattr(hierarchy, 'cpu_root', None) is None:
        return usage  # no slot cpu groups: the hog's share cannot be measured (the assertions say so)
    if hierarchy.version == 1:
        root = Path(hierarchy.cpuacct_root or hierarchy.cpu_root)
        for group in root.glob('judge-slot*'):
            usage[group.name.removeprefix('judge-')] = int((group / 'cpuacct.usage').read_text()) / 1e9
    else:
        for group in Path(hierarchy.cpu_root, 'judge').glob('slot*'):
            stat = dict(line.split() for line in (group / 'cpu.stat').read_text().splitlines())
            usage[group.name] = int(stat['usage_usec']) / 1e6
    return usage


def _slot_name(report: dict[str, object]) -> str:
    return str(report['slot']).rstrip('/').rpartition('/')[2]  # '8:pids:/judge/slot3' -> 'slot3'


@pytest.mark.parametrize('hog', HOGS)
def test_a_cpu_hog_does_not_starve_the_neighbouring_slot(gateway_url: str, health: SlotHealth, hog: str) -> None:
    if hog.startswith('c-'):  # compiled (and cached) now, so that it starts spinning with its neighbour
        warm_up = batch(gateway_url, [_hog(hog, warm_up=True)])[0]
        assert warm_up['verdict'] == 'accepted', warm_up
    alone = [report_of(r) for r in batch(gateway_url, [py(HONEST, delay=0.0, n=WORK)] * 2, route='/run/batch')]
    alone_s = statistics.median(float(r['wall']) for r in alone)
    before, start = _cpu_usage_s(), time.monotonic()
    hog_result, honest_result = batch(gateway_url, [_hog(hog), py(HONEST, delay=0.3, n=WORK)], route='/run/batch')
    elapsed_s, after = time.monotonic() - start, _cpu_usage_s()
    survived(hog_result)
    assert hog_result['verdict'] in ('accepted', 'time_limit'), hog_result  # it ran
    survived(honest_result)
    assert honest_result['verdict'] == 'accepted', honest_result  # without a CPU share: a time limit
    honest = report_of(honest_result)
    assert float(honest['wall']) < 3.5 * alone_s + 0.3, (hog, honest, alone)
    slots = {rel.rstrip('/').rpartition('/')[2] for rel in health.gate.cgroups}  # this stack's slots
    assert _slot_name(honest) in slots, (honest, slots)
    (hog_slot,) = slots - {_slot_name(honest)}
    assert hog_slot in before and hog_slot in after, f'no cpu group for {hog_slot}: {before}'
    used_s = after[hog_slot] - before[hog_slot]
    print(
        f'\nFAIRNESS {hog}: honest alone {alone_s:.3f}s, beside the hog {float(honest["wall"]):.3f}s; '
        f'hog slot used {used_s:.2f} CPU-s in {elapsed_s:.2f}s'
    )
    assert used_s <= 1.15 * elapsed_s + 0.2, (hog, used_s, elapsed_s)  # one CPU over all of its processes

"""A slot's share of the CPUs: the cpu cgroup of `judge.sandbox.kernel.cpushare` on this host (equal weight, one
CPU's quota over all of its processes)."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator

import pytest

from judge.sandbox.kernel import cgroups
from judge.sandbox.kernel.cpushare import SlotCpu, cpu_group_path
from judge.sandbox.slots import claim_slot

pytestmark = pytest.mark.skipif(not SlotCpu.available(), reason='needs root and a cpu cgroup controller')


@pytest.fixture
def group() -> Iterator[SlotCpu]:
    hierarchy = cgroups.detect()
    assert hierarchy is not None
    index, lock_fd = claim_slot()
    cpu = SlotCpu(cpu_group_path(hierarchy, index), cpus=0.5, hierarchy=hierarchy)
    cpu.create()
    yield cpu
    os.close(lock_fd)


def _spinner(procs_files: list[str], spin_s: float) -> int:
    pid = os.fork()
    if pid == 0:  # pragma: no cover - child
        try:
            for path in procs_files:
                with open(path, 'w') as f:
                    f.write('0')
            end = time.monotonic() + spin_s
            while time.monotonic() < end:
                pass
        finally:
            os._exit(0)
    return pid


def test_the_quota_caps_a_slot_over_all_its_processes(group: SlotCpu) -> None:
    assert group.quota_cpus() == 0.5
    before, start = group.usage_s(), time.monotonic()
    assert before is not None
    pids = [_spinner(group.procs_files, 1.5) for _ in range(4)]  # four busy processes
    for pid in pids:
        os.waitpid(pid, 0)
    used, elapsed = (group.usage_s() or 0.0) - before, time.monotonic() - start
    assert 0.1 < used <= 0.5 * elapsed * 1.15 + 0.05, (used, elapsed)  # half a CPU, whatever the process count


def test_the_group_is_created_again_idempotently_and_the_quota_can_be_lifted(group: SlotCpu) -> None:
    unlimited = SlotCpu(group.path, cpus=0, hierarchy=cgroups.detect())
    unlimited.create()
    assert unlimited.quota_cpus() is None
    group.create()
    assert group.quota_cpus() == 0.5


def test_v2_layout() -> None:
    v2 = cgroups.Hierarchy(2, '/cg', '/cg', '/cg')
    cpu = SlotCpu(cpu_group_path(v2, 7), cpus=1, hierarchy=v2)
    assert cpu.cpu_dir == '/cg/judge/slot7' and cpu.procs_files == ['/cg/judge/slot7/parent/cgroup.procs']
    assert cpu.usage_file == '/cg/judge/slot7/cpu.stat' and cpu.roots == ['/cg']
    v1 = cgroups.Hierarchy(1, '/m', '/p', '/c', '/a')
    cpu = SlotCpu(cpu_group_path(v1, 7), cpus=1, hierarchy=v1)
    assert cpu.procs_files == ['/c/judge-slot7/cgroup.procs', '/a/judge-slot7/cgroup.procs']
    assert cpu.usage_file == '/a/judge-slot7/cpuacct.usage' and cpu.roots == ['/c', '/a']
    assert not SlotCpu.available(cgroups.Hierarchy(1, '/m', '/p'))


def test_no_cpu_controller_is_an_error() -> None:
    with pytest.raises(OSError):
        SlotCpu('judge-slot0', cpus=1, hierarchy=cgroups.Hierarchy(1, '/m', '/p'))

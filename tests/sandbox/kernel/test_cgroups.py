"""A slot's memory and pids cgroups on this host (`judge.sandbox.kernel.cgroups`): limits, joining, kill_all,
memory and fork bombs run as a non-root uid inside a bounded group, removal."""

from __future__ import annotations

import errno
import os
import signal
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from judge.sandbox.kernel import cgroups, namespaces
from tests.support.forked import (
    UNPRIVILEGED_UID,
    Child,
    Send,
    adopting_orphans,
    drop_to,
    enter_private_mount_namespace,
    errno_of,
    run_in_child,
)

needs_cgroups = pytest.mark.skipif(not cgroups.SlotCgroup.available(), reason='needs root and memory+pids cgroups')


TEST_PARENT = 'judge-pytest'


@pytest.fixture
def slot() -> Iterator[cgroups.SlotCgroup]:
    cg = cgroups.SlotCgroup(f'slot-{os.getpid()}-{time.monotonic_ns()}', memory_mb=64, pids_max=16, parent=TEST_PARENT)
    try:
        cg.create()
        yield cg
    finally:
        cg.remove()
        _remove_test_parent(cg)


def _remove_test_parent(cg: cgroups.SlotCgroup) -> None:
    for root in cg.roots:
        try:
            os.rmdir(os.path.join(root, TEST_PARENT))
        except OSError:
            pass  # another run still uses it


def test_detect_finds_controllers() -> None:
    hierarchy = cgroups.detect()
    if hierarchy is None:
        pytest.skip('no memory+pids cgroup hierarchy')
    assert hierarchy.version in (1, 2)
    assert os.path.isfile(os.path.join(hierarchy.memory_root, 'cgroup.procs'))
    assert os.path.isfile(os.path.join(hierarchy.pids_root, 'cgroup.procs'))


def test_bad_names_rejected() -> None:
    for name in ('', '..', 'a/b', 'x y'):
        with pytest.raises((ValueError, OSError)):
            cgroups.SlotCgroup(name, memory_mb=64, pids_max=16)


def _memory_limit_bytes(cg: cgroups.SlotCgroup) -> int:
    name = 'memory.max' if cg.version == 2 else 'memory.limit_in_bytes'
    return int(Path(cg.memory_dir, name).read_text())


@needs_cgroups
def test_create_is_idempotent_and_sets_limits(slot: cgroups.SlotCgroup) -> None:
    slot.create()
    assert _memory_limit_bytes(slot) == 64 << 20
    assert Path(slot.pids_dir, 'pids.max').read_text().strip() == '16'
    memsw = Path(slot.memory_dir, 'memory.memsw.limit_in_bytes')
    for memory_mb in (32, 128):
        slot.set_memory_mb(memory_mb)
        assert _memory_limit_bytes(slot) == memory_mb << 20
        if slot.version == 1 and memsw.exists():
            assert int(memsw.read_text()) == memory_mb << 20
    assert slot.procs() == []
    assert slot.oom_kills() == 0
    slot.kill_all(timeout_s=0.1)


@needs_cgroups
def test_join_then_kill_all_empties_the_group(slot: cgroups.SlotCgroup) -> None:
    def body(send: Send) -> None:
        slot.join()
        for _ in range(3):
            if os.fork() == 0:
                time.sleep(20)
                os._exit(0)
        send({'pid': os.getpid()})
        time.sleep(20)

    with adopting_orphans() as orphans, Child(body) as child:
        msg = child.recv()
        assert msg is not None
        members = slot.procs()
        orphans.update(set(members) - {child.pid})
        assert child.pid in members and len(members) == 4
        start = time.monotonic()
        slot.kill_all(timeout_s=2.0)
        assert slot.procs() == []
        assert time.monotonic() - start < 1.0
        assert os.waitstatus_to_exitcode(child.wait()) == -signal.SIGKILL


@needs_cgroups
def test_memory_bomb_is_oom_killed(slot: cgroups.SlotCgroup) -> None:
    before = slot.oom_kills()

    def body(send: Send) -> None:
        slot.join()
        drop_to(UNPRIVILEGED_UID)
        chunks = []
        for _ in range(200 // 16):  # 200 MiB in touched 16 MiB chunks
            chunks.append(b'\x01' * (16 << 20))
        send({'allocated_mb': 16 * len(chunks)})

    msg, code = run_in_child(body)
    assert msg is None
    assert code == -signal.SIGKILL
    assert slot.oom_kills() > before
    assert slot.procs() == []


@needs_cgroups
def test_fork_bomb_is_capped_by_pids_max(slot: cgroups.SlotCgroup) -> None:
    slot.set_memory_mb(512)  # room for the children's copy-on-write pages: only pids.max may bite

    def body(send: Send) -> None:
        slot.join()
        drop_to(UNPRIVILEGED_UID)
        started, refused = 0, 0
        for _ in range(100):
            try:
                pid = os.fork()
            except BlockingIOError:
                refused += 1
                continue
            if pid == 0:
                time.sleep(20)
                os._exit(0)
            started += 1
        send({'started': started, 'refused': refused, 'uid': os.getuid()})
        time.sleep(20)

    with adopting_orphans() as orphans, Child(body) as child:
        msg = child.recv()
        assert msg is not None
        orphans.update(set(slot.procs()) - {child.pid})
        assert msg['uid'] == UNPRIVILEGED_UID
        assert msg['started'] == 15  # pids.max 16 includes the bomb itself
        assert msg['refused'] == 85
        assert len(slot.procs()) == 16
        slot.kill_all(timeout_s=2.0)
        assert slot.procs() == []
        assert os.waitstatus_to_exitcode(child.wait()) == -signal.SIGKILL


@needs_cgroups
def test_join_works_after_readonly_remount_with_cgroups_kept_writable(slot: cgroups.SlotCgroup) -> None:
    def body(send: Send) -> None:
        enter_private_mount_namespace()
        namespaces.remount_readonly_recursive('/')
        out = {'join_readonly': errno_of(slot.join)}
        namespaces.remount_readonly_recursive('/', keep_writable=slot.roots)
        out['join_kept_writable'] = errno_of(slot.join)
        out['member'] = os.getpid() in slot.procs()
        out['write_tmp'] = errno_of(lambda: open('/tmp/judge-should-be-readonly', 'x').close())
        send(out)

    msg, code = run_in_child(body)
    assert code == 0
    assert msg == {'join_readonly': errno.EROFS, 'join_kept_writable': 0, 'member': True, 'write_tmp': errno.EROFS}


@needs_cgroups
def test_remove_deletes_directories() -> None:
    cg = cgroups.SlotCgroup(f'rm-{os.getpid()}', memory_mb=32, pids_max=8, parent=TEST_PARENT)
    try:
        cg.create()
        assert all(os.path.isdir(p) for p in cg.paths)

        def body(send: Send) -> None:
            cg.join()
            send({})
            time.sleep(20)

        with Child(body) as child:
            child.recv()
            cg.remove()
            assert os.waitstatus_to_exitcode(child.wait()) == -signal.SIGKILL
        assert not any(os.path.exists(p) for p in cg.paths)
        cg.remove()  # idempotent
    finally:
        cg.remove()
        _remove_test_parent(cg)

"""Namespaces and prctl helpers in forked children (`judge.sandbox.kernel.namespaces`): unshare probes,
read-only roots with tmpfs and hidden dirs (only in a private mount namespace), /proc in a new pid namespace."""

from __future__ import annotations

import ctypes
import errno
import os
import signal
from pathlib import Path
from typing import Any

import pytest

from judge.sandbox.kernel import namespaces
from tests.support.forked import (
    IS_ROOT,
    UNPRIVILEGED_UID,
    Send,
    drop_to,
    enter_private_mount_namespace,
    errno_of,
    libc,
    run_in_child,
)

needs_root = pytest.mark.skipif(not IS_ROOT, reason='needs root')


@needs_root
def test_probe_unshare() -> None:
    all_flags = (
        namespaces.CLONE_NEWNS
        | namespaces.CLONE_NEWPID
        | namespaces.CLONE_NEWNET
        | namespaces.CLONE_NEWIPC
        | namespaces.CLONE_NEWUTS
        | namespaces.CLONE_NEWCGROUP
    )
    assert namespaces.probe_unshare(namespaces.CLONE_NEWNS)
    assert namespaces.probe_unshare(all_flags)
    assert not namespaces.probe_unshare(-1)  # EINVAL

    def body(send: Send) -> None:
        drop_to(UNPRIVILEGED_UID)
        send({'unprivileged': namespaces.probe_unshare(namespaces.CLONE_NEWNS)})

    msg, code = run_in_child(body)
    assert code == 0
    assert msg == {'unprivileged': False}


def test_prctl_helpers() -> None:
    def body(send: Send) -> None:
        value = ctypes.c_int(-1)
        namespaces.set_no_new_privs()
        namespaces.set_pdeathsig(signal.SIGTERM)
        namespaces.set_child_subreaper()
        libc.prctl(2, ctypes.byref(value), 0, 0, 0)  # PR_GET_PDEATHSIG
        pdeathsig = value.value
        libc.prctl(37, ctypes.byref(value), 0, 0, 0)  # PR_GET_CHILD_SUBREAPER
        send(
            {
                'nnp': '\nNoNewPrivs:\t1' in Path('/proc/self/status').read_text(),
                'pdeathsig': pdeathsig,
                'subreaper': value.value,
            }
        )

    msg, code = run_in_child(body)
    assert code == 0
    assert msg == {'nnp': True, 'pdeathsig': signal.SIGTERM, 'subreaper': 1}


@needs_root
def test_readonly_root_with_tmpfs_and_hidden_dir(tmp_path: Path) -> None:
    mnt, secret = tmp_path / 'mnt', tmp_path / 'secret'
    mnt.mkdir()
    secret.mkdir()
    (secret / 'key').write_text('s3cret')

    def body(send: Send) -> None:
        enter_private_mount_namespace()
        namespaces.remount_readonly_recursive('/')
        namespaces.mount_tmpfs(str(mnt), 4, mode=0o700, uid=UNPRIVILEGED_UID, gid=UNPRIVILEGED_UID)
        out: dict[str, Any] = {
            'write_tmp': errno_of(lambda: (tmp_path / 'x').write_text('x')),
            'write_tmpfs': errno_of(lambda: (mnt / 'y').write_text('y')),
            'tmpfs_owner': os.stat(mnt).st_uid,
            'tmpfs_full': errno_of(lambda: (mnt / 'big').write_bytes(b'\0' * (5 << 20))),
            'hidden': namespaces.hide_path(str(secret)),
            'hide_missing': namespaces.hide_path(str(tmp_path / 'missing')),
        }
        out['secret_listing'] = os.listdir(secret)
        out['write_hidden'] = errno_of(lambda: (secret / 'z').write_text('z'))
        send(out)

    msg, code = run_in_child(body)
    assert code == 0
    assert msg == {
        'write_tmp': errno.EROFS,
        'write_tmpfs': 0,
        'tmpfs_owner': UNPRIVILEGED_UID,
        'tmpfs_full': errno.ENOSPC,
        'hidden': True,
        'hide_missing': False,
        'secret_listing': [],
        'write_hidden': errno.EROFS,
    }
    # nothing leaked into the host's mount namespace
    assert os.listdir(mnt) == []
    assert (secret / 'key').read_text() == 's3cret'
    (tmp_path / 'after').write_text('host still writable')


@needs_root
def test_readonly_fallback_is_scoped_and_recursive(tmp_path: Path) -> None:
    outer, other = tmp_path / 'outer', tmp_path / 'other'
    other.mkdir()

    def body(send: Send) -> None:
        enter_private_mount_namespace()
        namespaces.mount_tmpfs(str(outer), 4)
        namespaces.mount_tmpfs(str(outer / 'inner'), 4, noexec=True)
        namespaces._remount_fallback(str(outer))
        options = {p: o for p, o in namespaces._mount_points()}
        out = {
            'outer': errno_of(lambda: (outer / 'a').write_text('a')),
            'inner': errno_of(lambda: (outer / 'inner' / 'b').write_text('b')),
            'other': errno_of(lambda: (other / 'c').write_text('c')),
            'inner_flags': sorted({'ro', 'nosuid', 'nodev', 'noexec'} & options[str(outer / 'inner')]),
        }
        namespaces._remount_fallback(str(outer / 'inner'), readonly=False)
        out['inner_again'] = errno_of(lambda: (outer / 'inner' / 'b').write_text('b'))
        out['outer_again'] = errno_of(lambda: (outer / 'a').write_text('a'))
        send(out)

    msg, code = run_in_child(body)
    assert code == 0
    assert msg == {
        'outer': errno.EROFS,
        'inner': errno.EROFS,
        'other': 0,
        'inner_flags': sorted(['ro', 'nosuid', 'nodev', 'noexec']),
        'inner_again': 0,
        'outer_again': errno.EROFS,
    }
    assert (other / 'c').read_text() == 'c'


@needs_root
def test_mount_proc_in_new_pid_namespace() -> None:
    def body(send: Send) -> None:
        enter_private_mount_namespace()
        namespaces.unshare(namespaces.CLONE_NEWPID)
        pid = os.fork()
        if pid == 0:  # pid 1 of the new pid namespace
            code = 1
            try:
                namespaces.mount_proc('/proc')
                pids = sorted(int(n) for n in os.listdir('/proc') if n.isdigit())
                code = 0 if pids == [1] and os.getpid() == 1 else 2
            finally:
                os._exit(code)
        send({'code': os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])})

    msg, code = run_in_child(body)
    assert code == 0
    assert msg == {'code': 0}

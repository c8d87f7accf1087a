"""Landlock applied in a forked child (`judge.sandbox.kernel.landlock`): file-system rules, and what stays
allowed when its TCP and signal scoping are off."""

from __future__ import annotations

import errno
import os
import socket
from pathlib import Path
from typing import Any

import pytest

from judge.sandbox.kernel import landlock
from tests.support.forked import Send, errno_of, run_in_child

LANDLOCK_ABI = landlock.abi_version()


needs_landlock = pytest.mark.skipif(LANDLOCK_ABI < 1, reason='Landlock unsupported')


@needs_landlock
def test_landlock_restricts_child(tmp_path: Path) -> None:
    ro, rw = tmp_path / 'ro', tmp_path / 'rw'
    ro.mkdir()
    rw.mkdir()
    (ro / 'data.txt').write_text('ro-data')
    single = tmp_path / 'single.txt'
    single.write_text('single')
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.bind(('127.0.0.1', 0))
    listener.listen(4)
    abstract = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    abstract_name = f'\0judge-landlock-test-{os.getpid()}'
    abstract.bind(abstract_name)
    abstract.listen(4)
    ruleset = landlock.build_ruleset(['/usr', str(ro), str(single), '/nonexistent/path'], [str(rw)])
    try:

        def body(send: Send) -> None:
            landlock.restrict_self(ruleset)
            out: dict[str, Any] = {
                'etc_hostname': errno_of(lambda: open('/etc/hostname', 'rb').close()),
                'list_usr': errno_of(lambda: os.listdir('/usr')),
                'read_ro': (ro / 'data.txt').read_text(),
                'read_single_file': single.read_text(),
                'write_ro': errno_of(lambda: (ro / 'new.txt').write_text('x')),
                'write_rw': errno_of(lambda: (rw / 'new.txt').write_text('rw-data')),
                'mkdir_rw': errno_of(lambda: (rw / 'sub').mkdir()),
                'list_root': errno_of(lambda: os.listdir('/')),
            }
            out['read_rw'] = (rw / 'new.txt').read_text()
            with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
                out['tcp_connect'] = errno_of(lambda: s.connect(listener.getsockname()))
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
                out['abstract_unix'] = errno_of(lambda: s.connect(abstract_name))
            out['signal_parent'] = errno_of(lambda: os.kill(os.getppid(), 0))
            send(out)

        msg, code = run_in_child(body)
    finally:
        os.close(ruleset)
        listener.close()
        abstract.close()
    assert code == 0
    assert msg is not None
    assert msg['etc_hostname'] == errno.EACCES
    assert msg['list_root'] == errno.EACCES
    assert msg['list_usr'] == 0
    assert msg['read_ro'] == 'ro-data'
    assert msg['read_single_file'] == 'single'
    assert msg['write_ro'] == errno.EACCES
    assert msg['write_rw'] == 0
    assert msg['mkdir_rw'] == 0
    assert msg['read_rw'] == 'rw-data'
    if LANDLOCK_ABI >= 4:
        assert msg['tcp_connect'] == errno.EACCES
    if LANDLOCK_ABI >= 6:
        assert msg['abstract_unix'] == errno.EPERM
        assert msg['signal_parent'] == errno.EPERM
    assert not (ro / 'new.txt').exists()


@needs_landlock
def test_landlock_options_off_keep_tcp_and_signals() -> None:
    ruleset = landlock.build_ruleset(['/'], [], deny_tcp=False, scope=False)
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.bind(('127.0.0.1', 0))
    listener.listen(4)
    try:

        def body(send: Send) -> None:
            landlock.restrict_self(ruleset)
            with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
                tcp = errno_of(lambda: s.connect(listener.getsockname()))
            send({'tcp': tcp, 'signal': errno_of(lambda: os.kill(os.getppid(), 0))})

        msg, code = run_in_child(body)
    finally:
        os.close(ruleset)
        listener.close()
    assert code == 0
    assert msg == {'tcp': 0, 'signal': 0}

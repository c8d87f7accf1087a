"""Channels between concurrent slots: locks on shared host files, watches on shared directories, the page cache.

Each attack runs a sender and a receiver side by side in the two slots (one batch; programs in
`tests.support.attacks.channels`), synchronised by time as an attacker would: the sender sets its bits at once and
holds them, the receiver probes a moment later.  A pair counts only when the two ran in different slots and the
receiver probed while the sender held its state; the receiver must learn nothing: a lock probe finds no lock, a
watch cannot be placed, a cache probe is refused or answers the same whatever the cache holds.  On the host, the
files a sender tried to evict are still in the page cache.  The defence is the seccomp filter's rules
(`judge.sandbox.kernel.seccomp_args`).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from judge.sandbox.kernel import seccomp
from tests.support.attacks.channels import (
    BASH_CACHE_PROBE,
    BASH_EVICTOR,
    BASH_LOCK_RECEIVER,
    BASH_LOCK_SENDER,
    C_CACHE_PROBE,
    C_EVICTOR,
    C_LOCK_RECEIVER,
    C_LOCK_SENDER,
    C_WATCHER,
    HOLD_S,
    PY_CACHE_PROBE,
    PY_EVICTOR,
    PY_IMPORTER,
    PY_LOCK_RECEIVER,
    PY_LOCK_SENDER,
    PY_WATCHER,
    WAIT_S,
)
from tests.support.attacks.kit import SlotHealth, bash, batch, c, py, report_of, survived
from tests.support.processes.host_view import evict, page_cache

pytestmark = [pytest.mark.integration, pytest.mark.attack, pytest.mark.both_paths]

SHARED = ['/usr/bin/env', '/usr/bin/cat', '/usr/bin/ls', '/usr/bin/head', '/usr/bin/tail', '/usr/bin/sort']
"""Host files every slot can read (the read-only root): one bit of the lock channel each."""
BITS = '101101'
LIB = '/usr/lib/python3.11'
EVICTION_TARGETS = [f'{LIB}/pydoc_data/topics.py', f'{LIB}/_pydecimal.py', f'{LIB}/mailbox.py']
"""Files a neighbour's imports could need, which the senders try to push out of the page cache."""
COLD = f'{LIB}/turtle.py'
"""A file the host evicts first: what the receivers' residency probes say about it."""
ATTEMPTS = 3
NOT_SUPPORTED = {'EOPNOTSUPP', 'ENOTSUP'}  # one errno (95), two names
ARCH = seccomp.native_arch()
NR = {name: seccomp.ARCHES[ARCH][1][name] for name in ('inotify_init1', 'fanotify_init', 'io_setup', 'inotify_init')
      if name in seccomp.ARCHES[ARCH][1]} if ARCH in seccomp.ARCHES else {}  # fmt: skip


def _needs(*paths: str) -> None:
    missing = [p for p in paths if not os.path.exists(p)]
    if missing:
        pytest.skip(f'not on this host: {missing}')


def _pair(url: str, sender: dict[str, Any], receiver: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """Run ``sender`` and ``receiver`` side by side; their reports, once they ran concurrently in two slots."""
    seen = []
    for _ in range(ATTEMPTS):
        sent, received = batch(url, [sender, receiver], route='/run/batch')
        survived(sent)
        survived(received)
        assert sent['verdict'] == received['verdict'] == 'accepted', (sent, received)
        s, r = report_of(sent), report_of(received)
        assert (s['role'], r['role']) == ('sender', 'receiver'), (s, r)
        if s['slot'] != r['slot'] and float(s['start']) <= float(r['probed']) <= float(s['end']):
            return s, r
        seen.append((s['slot'], r['slot'], s['start'], r['probed'], s['end']))
    raise AssertionError(f'the pair never ran side by side in two slots: {seen}')


def _mostly_cached(counts: tuple[int, int]) -> bool:
    """At least half of a file's pages in the page cache.  A sender's eviction drops them all; the host's
    own reclaim drops some of a file read once: proactive reclaim (DAMON's ``pageout`` of cold unmapped
    pages, on the CI hosts) took 27% of one target's pages during a run of this test."""
    resident, pages = counts
    return resident >= 0.5 * pages


def _warm_c(url: str, *sources: str) -> None:
    """Compile the C programs (cached) so that a pair starts together."""
    for result in batch(url, [c(source, stdin='warm') for source in sources], route='/run/batch'):
        assert result['verdict'] == 'accepted', (result['stdout'], result['stderr'])


# --------------------------------------------------------------------------------------------------
# locks


@pytest.mark.parametrize('lang', ['python', 'c', 'bash'])
def test_locks_on_shared_files_carry_no_bits(gateway_url: str, health: SlotHealth, lang: str) -> None:
    _needs(*SHARED)
    if lang == 'python':
        sender = py(PY_LOCK_SENDER, paths=SHARED, bits=[int(b) for b in BITS], hold=HOLD_S)
        receiver = py(PY_LOCK_RECEIVER, paths=SHARED, wait=WAIT_S)
    elif lang == 'c':
        _warm_c(gateway_url, C_LOCK_SENDER, C_LOCK_RECEIVER)
        sender = c(C_LOCK_SENDER, stdin=f'run {BITS} {len(SHARED)} {" ".join(SHARED)}')
        receiver = c(C_LOCK_RECEIVER, stdin=f'run {len(SHARED) + 1} {" ".join(SHARED)} /dev/null')
    else:
        sender = bash(BASH_LOCK_SENDER, stdin=f'{BITS} {" ".join(SHARED)}\n')
        receiver = bash(BASH_LOCK_RECEIVER, stdin=f'{" ".join(SHARED)}\n')
    s, r = _pair(gateway_url, sender, receiver)
    if lang == 'python':
        *per_file, null_lock = s['held']
        assert null_lock == 'OK', s  # a write lock on /dev/null, writable by every slot
        granted = [x for h in per_file if h for x in h]
    else:
        granted = [x for h in s['held'] for x in h] if lang == 'c' else s['held'].split()
    assert len(granted) >= BITS.count('1') and set(granted) <= {'OK', '1'}, s  # the sender got every lock
    seen = r['seen'] if lang != 'bash' else list(r['seen'])
    assert seen and all(set(bits) == {'0'} for bits in seen), (BITS, r)  # the receiver saw no lock at all


# --------------------------------------------------------------------------------------------------
# watches


@pytest.mark.parametrize('lang', ['python', 'c'])
def test_no_watch_can_be_placed_on_shared_directories(gateway_url: str, health: SlotHealth, lang: str) -> None:
    if not NR:
        pytest.skip(f'no syscall table for {ARCH}')
    importer = py(PY_IMPORTER, hold=HOLD_S)
    if lang == 'python':
        watcher = py(PY_WATCHER, nr=NR, hold=HOLD_S)
    else:
        _warm_c(gateway_url, C_WATCHER)
        watcher = c(C_WATCHER, stdin='run')
    s, r = _pair(gateway_url, importer, watcher)
    assert s['imports'] > 0, s
    got = r['got']
    assert got.pop('dnotify') == 'EINVAL', r  # F_NOTIFY: as on a kernel without dnotify
    assert got.pop('fanotify_init') == 'EPERM', r
    assert set(got.values()) == {'ENOSYS'}, r  # inotify_init1 (and inotify_init on x86_64)
    assert r['events'] == 0, r


# --------------------------------------------------------------------------------------------------
# the page cache


@pytest.mark.parametrize('lang', ['python', 'c', 'bash'])
def test_the_page_cache_is_neither_evicted_nor_probed(gateway_url: str, health: SlotHealth, lang: str) -> None:
    _needs(*EVICTION_TARGETS, COLD)
    if lang == 'c':
        _warm_c(gateway_url, C_EVICTOR, C_CACHE_PROBE)
    for path in EVICTION_TARGETS:
        Path(path).read_bytes()  # in the page cache before the attack
        assert _mostly_cached(page_cache(path)), path
    evict(COLD)
    cold = page_cache(COLD)
    if lang == 'python':
        sender = py(PY_EVICTOR, paths=EVICTION_TARGETS, hold=HOLD_S)
        receiver = py(PY_CACHE_PROBE, paths=EVICTION_TARGETS, cold=COLD, io_setup=NR.get('io_setup', 0), wait=WAIT_S)
    elif lang == 'c':
        targets = f'{len(EVICTION_TARGETS)} {" ".join(EVICTION_TARGETS)}'
        sender = c(C_EVICTOR, stdin=f'run {targets}')
        receiver = c(C_CACHE_PROBE, stdin=f'run {targets} {COLD}')
    else:
        sender = bash(BASH_EVICTOR, stdin=' '.join(EVICTION_TARGETS) + '\n')
        receiver = bash(BASH_CACHE_PROBE, stdin=COLD + '\n')
    s, r = _pair(gateway_url, sender, receiver)
    after = {path: page_cache(path) for path in EVICTION_TARGETS}
    assert all(_mostly_cached(counts) for counts in after.values()), (s, after)  # nothing was evicted
    if lang == 'python':
        assert all(outcomes == ['OK', 'OK', 'OK'] for outcomes in s['done'].values()), s  # "done", and ignored
        assert {r['got'].pop(path) for path in EVICTION_TARGETS} <= NOT_SUPPORTED, r  # RWF_NOWAIT
        assert r['got'] == {'cachestat': 'ENOSYS', 'io_setup': 'ENOSYS'}, r
    elif lang == 'c':
        assert all(done == ['OK', 'OK', 0] for done in s['done']), s
        assert set(r['nowait']) <= NOT_SUPPORTED and r['nowait'], r
    else:
        assert s['done'].split() == ['ok'] * len(EVICTION_TARGETS), s
        whole = -(-int(r['size']) // 4096) * 4096
        assert r['fincore'] == str(whole), r  # fincore (mincore): every page resident, though the host evicted it
    if lang != 'bash':  # mincore: every page resident, though the host evicted the file (cold[0] == 0 here)
        pages = r['cold_resident'][1]
        assert r['cold_resident'] == [pages, pages], (r, cold)


# --------------------------------------------------------------------------------------------------
# honest programs


SQLITE = """
import sqlite3
out = []
for mode in ('delete', 'wal'):
    db = sqlite3.connect(f'{mode}.db')
    db.execute(f'pragma journal_mode={mode}')
    db.execute('create table t (x integer)')
    db.executemany('insert into t values (?)', [(i,) for i in range(100)])
    db.commit()
    other = sqlite3.connect(f'{mode}.db')  # a second connection: sqlite's own locking between the two
    other.execute('insert into t values (1000)')
    other.commit()
    out.append(db.execute('select count(*), sum(x) from t').fetchone())
print(out)
"""

BASH_FLOCK = 'touch mine.lock\nflock mine.lock echo held\n( flock -n 9 && echo again ) 9>mine.lock\n'

C_ADVICE = r"""
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <sys/uio.h>
#include <unistd.h>
int main(void) {
    int fd = open("/usr/bin/env", O_RDONLY); char buf[64]; struct iovec v = {buf, sizeof buf};
    int seq = posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL), willneed = posix_fadvise(fd, 0, 0, POSIX_FADV_WILLNEED);
    printf("%d %d %zd\n", seq, willneed, preadv2(fd, &v, 1, 0, 0));
    return 0;
}
"""


def test_honest_lock_and_cache_users_still_work(gateway_url: str, health: SlotHealth) -> None:
    subs = [py(SQLITE, '[(101, 5950), (101, 5950)]'), bash(BASH_FLOCK, 'held\nagain'), c(C_ADVICE, '0 0 64')]
    for result in batch(gateway_url, subs):
        survived(result)
        assert result['verdict'] == 'accepted', (result['stdout'], result['stderr'])

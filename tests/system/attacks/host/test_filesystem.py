"""File system: the host's files (secrets, the project, /root, /proc/1), writes outside the work dir, symlink
and hard-link tricks, C++ includes of host files, and other submissions' compiled binaries.

Most cases are in the main batch (`tests.support.attacks.batch`); the compile cache has its own.  Not
attacks, but checked with them: /dev/null, /dev/urandom and a private /dev/shm stay usable."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest

from tests.support.attacks.batch import DENIED, EMPTY, PROJECT_FILE, MainBatch, refused
from tests.support.attacks.kit import batch, py, report_of, survived
from tests.support.processes.stack import Stack

pytestmark = [pytest.mark.integration, pytest.mark.attack, pytest.mark.both_paths]


def test_host_files_are_unreadable(main_batch: MainBatch) -> None:
    result = main_batch.results['read_files']
    survived(result)
    got = report_of(result)
    for name, outcome in got.items():
        assert outcome in DENIED or (name == 'shadow' and outcome == EMPTY), (name, outcome)
    assert f'TOP-SECRET-{main_batch.marker}' not in result['stdout'] + result['stderr']
    assert 'REDIS' not in result['stdout']


def test_writes_never_reach_the_host(main_batch: MainBatch) -> None:
    result = main_batch.results['write_files']
    survived(result)
    got = report_of(result)
    for name in ('tmp', 'var_tmp', 'cache', 'repo', 'slot_dir'):
        assert got[name] in DENIED, (name, got)
    assert got['dev_shm'] in DENIED or got['dev_shm'] == 'OK'  # the slot's /dev/shm is private anyway
    assert got['cgroup_escape'] and all(outcome in DENIED for outcome in got['cgroup_escape']), got
    for key in ('tmp', 'var_tmp', 'dev_shm', 'cache', 'repo'):
        assert not main_batch.paths[key].exists(), main_batch.paths[key]


def test_symlink_tricks_in_the_work_dir(stack: Stack, main_batch: MainBatch) -> None:
    result = main_batch.results['symlinks']
    survived(result)
    got = report_of(result)
    for name, outcome in got.items():
        # an empty listing is the hidden (empty tmpfs) project dir; an empty read is /etc/shadow's /dev/null
        assert refused(outcome) or outcome == {'project_dir_link': 'OK:[]'}.get(name, EMPTY), (name, outcome)
    assert got['shadow_link'] in (*DENIED, EMPTY) and got['run'] in (*DENIED, EMPTY), got
    assert got['hardlink_shadow'] in ('EXDEV', 'EPERM', 'EACCES'), got
    cache = Path(stack.env['JUDGE_CACHE_DIR'])
    assert not [p for p in cache.rglob('*') if p.is_symlink()], 'a symlink reached the compile cache'


@pytest.mark.parametrize('target', ['/etc/shadow', 'project'])
def test_cpp_include_of_host_files(main_batch: MainBatch, target: str) -> None:
    result = main_batch.results['cpp_include_shadow' if target == '/etc/shadow' else 'cpp_include_project']
    survived(result)
    if target == '/etc/shadow':
        # refused, or it includes the empty /dev/null that covers /etc/shadow: never a password hash
        assert (
            result['verdict'] == 'compile_error' and '/etc/shadow: Permission denied' in result['stderr']
        ) or result['verdict'] == 'accepted', result
        assert 'root:' not in result['stderr'] + result['stdout'], result
    else:
        assert result['verdict'] == 'compile_error', result
        assert f'{PROJECT_FILE}: No such file or directory' in result['stderr'], result
        assert 'pydantic' not in result['stderr'], result


# --- the compile cache ----------------------------------------------------------------------------


CACHE_SNOOP = """
import subprocess
found, ran = [], []
for root, dirs, files in os.walk(P['cache']):
    for name in files:
        path = os.path.join(root, name)
        try:
            if os.path.getsize(path) < (8 << 20):
                with open(path, 'rb') as f:
                    if P['marker'].encode() in f.read():
                        found.append(path)
        except OSError:
            pass
for path in found:  # run another submission's compiled solution
    ran.append(attempt(lambda: subprocess.run([path], capture_output=True, timeout=2).stdout.decode()))
report(listing=attempt(lambda: len(os.listdir(P['cache']))), found=found, ran=ran)
"""


def test_compile_cache_of_other_submissions_is_unreadable(stack: Stack, gateway_url: str) -> None:
    marker = f'CACHED-{uuid.uuid4().hex[:12]}'
    cpp = {'type': 'cpp', 'solution': f'#include <cstdio>\nint main() {{ puts("{marker}"); return 0; }}\n'}
    compiled = batch(gateway_url, [cpp], route='/run/batch')[0]
    assert compiled['verdict'] == 'accepted' and compiled['stdout'] == marker + '\n', compiled
    snoop = batch(gateway_url, [py(CACHE_SNOOP, cache=stack.env['JUDGE_CACHE_DIR'], marker=marker)], '/run/batch')
    survived(snoop[0])
    got = report_of(snoop[0])
    assert got['found'] == [] and got['ran'] == [], f"another submission's binary was read/run: {got}"
    assert refused(got['listing']), got


# --- what must keep working ------------------------------------------------------------------------


def test_dev_nodes_are_usable(main_batch: MainBatch) -> None:
    """Not an attack: a nodev remount of the whole tree would break /dev/null, /dev/urandom, DEVNULL."""
    result = main_batch.results['dev_nodes']
    survived(result)
    got = report_of(result)
    assert got == {'dev_null_write': 'OK', 'dev_urandom': 'OK:64', 'subprocess_devnull': 'OK:0'}, got


def test_private_dev_shm_is_writable(main_batch: MainBatch) -> None:
    """Not an attack: the slot's private /dev/shm must be writable (multiprocessing needs it), never the host's."""
    result = main_batch.results['dev_shm']
    survived(result)
    got = report_of(result)
    assert got['dev_shm_write'] == 'OK' and got['mp_lock'].startswith('OK'), got
    assert not Path('/dev/shm', f'{main_batch.marker}-shm').exists()  # private: never on the host

"""Work spaces of the namespaces tier (`judge.sandbox.server.files.spaces`): one tmpfs per execution, stacked on a
holder that is unmounted every `STACK_MAX` executions whatever the programs do (counted from inside each
execution, in its mount table), discarded spares mounting nothing; a covered tmpfs that holds much is
emptied first (the slot's memory cgroup keeps no charge for it); every execution starts in an empty
tmpfs of its own."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from judge.sandbox.client import ExecRequest, SlotClient, SlotConfig
from judge.sandbox.server.files.spaces import LEFT_BYTES, STACK_MAX
from judge.sandbox.slots import claim_slot
from tests.support.processes.slots import PYTHON, RUN_LIMITS

pytestmark = pytest.mark.skipif(os.getuid() != 0, reason='the namespaces tier needs root')

DEPTH = "import os\nprint(sum('/space' in line.split()[4] for line in open('/proc/self/mountinfo')))"
"""How many mounts the slot has under its holder (the holder included), as its current execution sees."""
LOOK = "import os\nprint(sorted(os.listdir('.')), sorted(os.listdir('/dev/shm')), os.stat('.').st_ino)"
WRITE = f"open('big', 'w').write('x' * {2 * LEFT_BYTES})\nopen('/dev/shm/s', 'w').write('y')\nos.mkdir('d')"
ORDINARY = "['source.py'] [] 3"


@pytest.fixture
def slot() -> Iterator[SlotClient]:
    index, lock_fd = claim_slot()
    work_root = f'/tmp/judge-test-spaces-{os.getpid()}'
    client = SlotClient(
        SlotConfig(slot=index, python=PYTHON, tier='namespaces', work_root=work_root, memory_mb=256, pids=64)
    )
    try:
        client.ensure_started()
        yield client
    finally:
        client.close()
        os.close(lock_fd)


def _run(client: SlotClient, source: str) -> str:
    result = client.run(ExecRequest(limits=RUN_LIMITS._replace(time_s=5), python_source=source))
    assert result.exit_code == 0, result.stderr
    return result.stdout.decode().strip()


def test_the_stack_is_unmounted_on_a_count_whatever_the_programs_do(slot: SlotClient) -> None:
    client = slot
    depths = []
    for i in range(2 * STACK_MAX + 6):
        if i % 5 == 2:
            _run(client, 'import os\n' + WRITE)  # leaves files, data and /dev/shm behind
        elif i % 5 == 4:
            bare = client.run(
                ExecRequest(limits=RUN_LIMITS._replace(time_s=5), python_source='print(1)', parent='bare')
            )
            assert bare.stdout == b'1\n'  # another warm parent: the waiting spare is discarded
        else:
            assert _run(client, LOOK) == ORDINARY  # an empty tmpfs of its own, whatever the one before did
        depths.append(int(_run(client, DEPTH)))
    steps = [b - a for a, b in zip(depths, depths[1:], strict=False)]
    # each execution mounts one tmpfs, discarded spares none; the holder goes every STACK_MAX
    assert set(steps) <= {2, 2 - STACK_MAX}, depths
    assert max(depths) <= STACK_MAX + 1 and steps.count(2 - STACK_MAX) >= 3, depths


def test_a_covered_tmpfs_that_holds_much_is_emptied(slot: SlotClient) -> None:
    client = slot
    if not os.path.isdir('/sys/fs/cgroup/memory'):
        pytest.skip('no cgroup v1 memory controller')
    big_mb = 24
    chunk = min(RUN_LIMITS.file_bytes, 4 << 20)
    writes = f"for i in range({(big_mb << 20) // chunk}):\n    open(f'f{{i}}', 'w').write('x' * {chunk})"
    for _ in range(8):  # 192 MB of files in all: more than the slot's 256 MB allows beside the programs
        writer = client.run(ExecRequest(limits=RUN_LIMITS._replace(time_s=5), python_source=writes))
        assert writer.exit_code == 0 and not writer.memory_exceeded, writer.stderr
        assert _run(client, LOOK) == ORDINARY  # the writer's tmpfs is covered now
    said = _run(client, "print(open('/proc/self/cgroup').read())")
    memory = next(line.split(':', 2)[2] for line in said.splitlines() if line.split(':')[1] == 'memory')
    with open(f'/sys/fs/cgroup/memory{memory}/memory.usage_in_bytes') as f:
        charged = int(f.read())
    assert charged < 3 * big_mb << 20, charged  # the covered files are gone

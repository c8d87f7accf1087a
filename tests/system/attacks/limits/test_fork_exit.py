"""Fork and exit: a child of the program ends its run.

In warm Python, only the program's own main process reports the end of the run
(`judge.sandbox.zygote.warm.run_python`): a forked child that calls ``sys.exit``, raises, or simply runs off
the end of the script ends itself, exactly as under ``python3 file.py``, and its parent's output and
verdict stand.  Fresh processes (C, bash) never had the problem; their cases guard it.

A forged end record (the FIFO warm Python reports its end in) ends only its own execution: checked in the
main batch (`tests.support.attacks.batch`) and, with a child that leaves its process group, here.
"""

from __future__ import annotations

import pytest

from tests.support.attacks.batch import MainBatch
from tests.support.attacks.kit import SlotHealth, bash, batch, c, py, report_of, survived
from tests.support.processes.stack import TIME_LIMIT_S

pytestmark = [pytest.mark.integration, pytest.mark.attack, pytest.mark.both_paths]

ANSWER = '42'

CHILD_EXITS = """
import time
pid = os.fork()
if pid == 0:
    {how}
time.sleep(0.3)
print(6 * 7)
"""

FALLS_OFF_THE_END = """
import time
pid = os.fork()
if pid != 0:
    time.sleep(0.3)
    print(6 * 7)
"""

MULTIPROCESSING = """
import multiprocessing, sys, time
def work():
    sys.exit(3)
if __name__ == '__main__':
    ctx = multiprocessing.get_context('fork')
    p = ctx.Process(target=work)
    p.start()
    p.join()
    time.sleep(0.2)
    print(6 * 7 if p.exitcode == 3 else p.exitcode)
"""

NESTED = """
import time
if os.fork() == 0:
    if os.fork() == 0:
        raise SystemExit(0)
    os.wait()
    sys.exit(0)
time.sleep(0.3)
print(6 * 7)
"""

C_CHILD_EXITS = r"""
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
int main(void) {
    if (fork() == 0) exit(0);
    if (fork() == 0) _exit(3);
    usleep(300000);
    printf("42\n");
    return 0;
}
"""

BASH_CHILD_EXITS = """
( exit 0 ) &
bash -c 'exit 1' &
(sleep 0.05; kill -TERM $$ 2>/dev/null; exit 0) &
trap '' TERM
sleep 0.3
echo 42
"""

FORGED_END_AND_ESCAPE = """
import struct, time
child = os.fork()
if child == 0:
    os.setpgid(0, 0)
    time.sleep(100)
    os._exit(0)
time.sleep(0.1)
moved = attempt(os.setpgid, 0, child)  # leave its process group, so that a kill of the group misses it
fd = os.open(os.getcwd() + '.done', os.O_WRONLY)
os.write(fd, struct.pack('>idq', 0, 0.0, 0))  # "exited 0" while it goes on running
os.close(fd)
report(moved=moved)
time.sleep(100)
"""

CHILD_WAYS = {
    'sys_exit': 'sys.exit(0)',
    'sys_exit_code': 'sys.exit(5)',
    'builtin_exit': 'exit()',
    'raise': 'raise RuntimeError("child")',
    'system_exit': 'raise SystemExit',
    'os_exit': 'os._exit(0)',
}


def test_forked_children_never_end_the_run(gateway_url: str, health: SlotHealth) -> None:
    subs = [py(CHILD_EXITS.format(how=how), ANSWER) for how in CHILD_WAYS.values()]
    subs += [py(FALLS_OFF_THE_END, ANSWER), py(MULTIPROCESSING, ANSWER), py(NESTED, ANSWER)]
    subs += [c(C_CHILD_EXITS, ANSWER), bash(BASH_CHILD_EXITS, ANSWER)]  # fresh processes: guards
    names = [*CHILD_WAYS, 'falls_off_the_end', 'multiprocessing', 'nested', 'c', 'bash']
    for name, result in zip(names, batch(gateway_url, subs), strict=True):
        survived(result)
        assert (result['verdict'], result['stdout']) == ('accepted', '42\n'), (name, result)


def test_a_forged_end_only_ends_its_own_run_and_leaves_nothing(gateway_url: str, health: SlotHealth) -> None:
    for result in batch(gateway_url, [py(FORGED_END_AND_ESCAPE)] * 2):
        survived(result)
        assert result['exit_code'] == 0 and result['cost'] < 2, result  # answered at once, then killed
        assert report_of(result) == {'moved': 'EPERM'}, result  # a session leader keeps its group


# --- from the main batch --------------------------------------------------------------------------


def test_a_forged_end_only_ends_its_own_execution(main_batch: MainBatch) -> None:
    # Writing a fake "done" record is like exiting: the answer comes at once with the output so far,
    # then the program is killed (test_no_process_outlives_the_batch).  The FIFO is the slot uid's
    # alone, so no other slot's program can end this one early.
    result = main_batch.results['forged_done']
    survived(result)
    assert report_of(result) == {'fifo': True, 'mode': '0o600', 'mine': True}, result
    assert result['exit_code'] == 0 and result['cost'] < TIME_LIMIT_S / 2, result  # not cut by the clock

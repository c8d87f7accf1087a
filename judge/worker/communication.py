"""Submissions that talk to a manager over FIFOs (IOI's Communication tasks).

The manager is a trusted C++ program that comes with the problem.  Both it and the submission are
compiled like any C++ submission (once per node, cached); then one execution in the slot runs
`LAUNCHER`, a bash script that:

1. makes two FIFOs per copy of the submission in the work dir, ``u<i>_to_m`` and ``m_to_u<i>``;
2. starts ``./manager`` with every copy's pair of paths and the manager's own arguments, on the
   submission's input;
3. starts ``processes`` copies of the submission (``./run``): with ``std_io`` a copy reads
   ``m_to_u<i>`` on stdin and writes ``u<i>_to_m`` on stdout, its stderr dropped; with ``fifo_io`` it
   gets the two paths as arguments.  With more than one copy, each also gets its index;
4. waits for the manager and ends with its exit status (copies still running are killed).

The copies run with the manager's uid.  The slot's ``/proc`` shows them no other process's
descriptors; besides, the manager starts first, from a binary made execute-only (the kernel makes
such a process non-dumpable: not traceable, its descriptors closed to others), and the launcher lets
go of the input and the output before any copy starts.  So a copy can neither read the manager's input
nor write the answer; it can still signal the manager, which ends the exchange and scores nothing.

The manager's stdout and stderr are the answer's.  Everything runs in the one execution, under its
limits: its time limit bounds the whole exchange, its memory and process limits every program
together.  A launcher that cannot make its FIFOs ends before any program starts, with
`LAUNCHER_FAILED` as its whole stderr: the runner reports that as the node's failure, never as the
submission's.
"""

from __future__ import annotations

from judge.contracts import MANAGER_MAX_PROCESSES, ManagerDict
from judge.sandbox.client import ExecRequest, ExecResult
from judge.sandbox.limits import Limits

LAUNCHER_NAME = '.launch.sh'
LAUNCHER_EXIT = 125
LAUNCHER_FAILED = 'judge launcher: cannot make the FIFOs'
LAUNCHER = f"""\
n=$1; io=$2; shift 2
exec 3>&2 2> /dev/null 4<&0  # programs write to fd 3; bash's own notices (a copy killed...) go nowhere
pairs=()
for ((i = 0; i < n; i++)); do
  mkfifo -m 600 "u${{i}}_to_m" "m_to_u${{i}}" || break
  pairs+=("u${{i}}_to_m" "m_to_u${{i}}")
done
if ((${{#pairs[@]}} != 2 * n)) || ! chmod 111 manager; then
  echo "{LAUNCHER_FAILED}" >&3
  exit {LAUNCHER_EXIT}
fi
./manager "${{pairs[@]}}" "$@" <&4 2>&3 3>&- 4<&- &
manager=$!
exec 0< /dev/null 1> /dev/null 4<&-  # only the manager holds the input and the output now
for ((i = 0; i < n; i++)); do
  index=()
  if ((n > 1)); then index=("$i"); fi
  if [ "$io" = fifo_io ]; then
    ./run "m_to_u${{i}}" "u${{i}}_to_m" "${{index[@]}}" 2>&3 3>&- &
  else
    ./run "${{index[@]}}" < "m_to_u${{i}}" > "u${{i}}_to_m" 3>&- &
  fi
done
exec 3>&-
wait "$manager"
status=$?
kill -9 $(jobs -p)
exit $status
"""
USER_IO = ('std_io', 'fifo_io')
MAX_ARGS = 64


def check_manager(manager: ManagerDict) -> None:
    """`ValueError` for a manager spec the launcher cannot run (the doors check their requests first)."""
    processes = manager.get('processes')
    if not isinstance(processes, int) or isinstance(processes, bool) or not 1 <= processes <= MANAGER_MAX_PROCESSES:
        raise ValueError(f'manager processes must be an integer from 1 to {MANAGER_MAX_PROCESSES}')
    if manager.get('user_io') not in USER_IO:
        raise ValueError(f'manager user_io must be one of {USER_IO}')
    args = manager.get('args') or []
    if len(args) > MAX_ARGS or not all(isinstance(a, str) and '\0' not in a for a in args):
        raise ValueError(f'manager args must be at most {MAX_ARGS} strings')


def launch_request(
    manager: ManagerDict, bash_argv: list[str], artifacts: tuple[str, str], limits: Limits, stdin: bytes
) -> ExecRequest:
    """The execution that runs the submission's artifact beside the manager's (``artifacts``: the
    submission's, the manager's), ``bash_argv`` running `LAUNCHER_NAME`."""
    argv = [*bash_argv, str(manager['processes']), manager['user_io'], *(manager.get('args') or [])]
    return ExecRequest(
        limits=limits,
        argv=argv,
        files={LAUNCHER_NAME: LAUNCHER},
        imports={'run': artifacts[0], 'manager': artifacts[1]},
        stdin=stdin,
    )


def launcher_failed(result: ExecResult) -> bool:
    """Whether the launcher ended before starting any program (the node's failure)."""
    return result.exit_code == LAUNCHER_EXIT and result.stderr.decode('utf-8', 'replace').strip() == LAUNCHER_FAILED

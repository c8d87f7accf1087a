"""The sandbox's exceptions: failures of the sandbox itself, never of the program it runs::

    SandboxError (RuntimeError)    an infrastructure error: reported as such, never as a verdict
    ├── SlotLost                   the slot server died, hung or broke during a request (worth a retry)
    ├── NoFreeSlot                 every slot number on this host is taken
    ├── JailError                  the requested isolation cannot be provided on this host
    ├── ProtocolError              the peer closed the channel or sent something unreadable
    ├── ZygoteLost                 a warm parent died and must be replaced
    ├── SlotUnhealthy              the slot could not be made clean after an execution
    └── CleanupError (OSError)     a tree could not be removed completely

Imports nothing: the warm parents load it (through `judge.sandbox.protocol`), and a program forked
from them can reach what they hold.
"""


class SandboxError(RuntimeError):
    """The sandbox itself failed (not the user's program): an infrastructure error."""


class SlotLost(SandboxError):
    """The slot server died, hung or broke during a request: worth a retry on a fresh one."""


class NoFreeSlot(SandboxError):
    """Every slot number on this host is taken."""


class JailError(SandboxError):
    """The requested isolation cannot be provided on this host."""


class ProtocolError(SandboxError):
    """The peer closed the channel or sent something unreadable."""


class ZygoteLost(SandboxError):
    """The zygote died: it cannot start executions any more and must be replaced."""


class SlotUnhealthy(SandboxError):
    """The slot could not be brought back to a clean state after an execution."""


class CleanupError(OSError, SandboxError):
    """A tree could not be removed completely (the slot is then not fit for the next execution).

    Also an `OSError`: the slot server treats it as one where it forks spares and renews parents.
    """

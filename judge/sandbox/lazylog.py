"""Loggers for the sandbox modules that import `logging` only when there is something to say.

The slot server's zygote forks once per execution.  `logging` imports `threading`, and threading's
at-fork handler then runs in every forked child and touches pages the child would otherwise share,
which roughly doubles the CPU and page faults of a fork+exit.  So the server never imports `logging`
unless it must report a warning or an error; debug and info messages are dropped there (its level is
WARNING anyway).  In a process that already uses `logging` (a worker, the tests) these loggers are
plain `logging` loggers.
"""

from __future__ import annotations

import sys

TYPE_CHECKING = False
if TYPE_CHECKING:  # imported by the warm parents: see `judge.sandbox.fdio`
    from typing import Any

_FORMAT = '%(name)s: %(message)s'


class LazyLogger:
    """A stand-in for ``logging.getLogger(name)`` that defers importing `logging`."""

    __slots__ = ('name',)

    def __init__(self, name: str) -> None:
        self.name = name

    def _logger(self) -> Any:
        first = 'logging' not in sys.modules
        import logging

        if first and not logging.root.handlers:  # a lean process (the slot server): report on stderr
            logging.basicConfig(level=logging.WARNING, stream=sys.stderr, format=_FORMAT)
        return logging.getLogger(self.name)

    def debug(self, msg: str, *args: Any) -> None:
        """Log at DEBUG, unless `logging` is not loaded (then nobody listens)."""
        if 'logging' in sys.modules:
            self._logger().debug(msg, *args)

    def info(self, msg: str, *args: Any) -> None:
        """Log at INFO, unless `logging` is not loaded (then nobody listens)."""
        if 'logging' in sys.modules:
            self._logger().info(msg, *args)

    def warning(self, msg: str, *args: Any) -> None:
        """Log at WARNING (imports `logging` if needed)."""
        self._logger().warning(msg, *args)

    def error(self, msg: str, *args: Any) -> None:
        """Log at ERROR (imports `logging` if needed)."""
        self._logger().error(msg, *args)

    def exception(self, msg: str, *args: Any) -> None:
        """Log at ERROR with the current exception's traceback (imports `logging` if needed)."""
        self._logger().exception(msg, *args)


def get_logger(name: str) -> LazyLogger:
    """The lazy logger called ``name`` (a dotted name, as for `logging.getLogger`)."""
    return LazyLogger(name)

"""A plain-text progress bar for the offline evaluators (`toolkit.evaluate`, `toolkit.evaluate.maths`)."""

from __future__ import annotations

import time
from typing import TextIO

__all__ = ['Progress']


class Progress:
    """A plain-text progress bar on ``stream`` (redrawn in place on a terminal, else a line every 10%)."""

    def __init__(self, total: int, stream: TextIO, *, enabled: bool = True, width: int = 30) -> None:
        self.total, self.stream, self.enabled, self.width = total, stream, enabled, width
        self.done = 0
        self.started = time.monotonic()
        self._tty = stream.isatty()
        self._last_draw = 0.0
        self._last_decile = -1

    def advance(self, n: int) -> None:
        """Count ``n`` more finished submissions and redraw when due."""
        self.done += n
        if not self.enabled:
            return
        now = time.monotonic()
        if self._tty:
            if now - self._last_draw >= 0.1 or self.done >= self.total:
                self._last_draw = now
                self.stream.write('\r' + self.line(now))
                self.stream.flush()
        elif (decile := self.done * 10 // self.total) > self._last_decile:
            self._last_decile = decile
            self.stream.write(self.line(now) + '\n')
            self.stream.flush()

    def line(self, now: float) -> str:
        """The bar, e.g. ``[#######-------] 50/100  50.0%  12.3 sub/s  ETA 4s``."""
        fill = self.width * self.done // self.total
        elapsed = max(now - self.started, 1e-9)
        rate = self.done / elapsed
        eta = f'{(self.total - self.done) / rate:.0f}s' if rate > 0 else '?'
        pct = 100 * self.done / self.total
        bar = '#' * fill + '-' * (self.width - fill)
        return f'[{bar}] {self.done}/{self.total} {pct:5.1f}% {rate:7.1f} sub/s  ETA {eta}'

    def close(self) -> None:
        """End the in-place line."""
        if self.enabled and self._tty:
            self.stream.write('\n')
            self.stream.flush()

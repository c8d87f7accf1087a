"""Which warm parent a program needs when its source does not show it: from the payloads it carries
encoded, else learned from its shape.

The source scan (`judge.sandbox.server.warm.parents.WarmParents.choose`) sees imports that are written
out.  Clients' templates carry the model's code encoded (rStar2-Agent's runs base64 text through
``exec``), so the scan also reads every base64 payload of the source (`shown_payloads`: any run of the
base64 alphabet that decodes to UTF-8 text, whatever the template around it).  A program that still
hides its imports (a computed ``importlib.import_module``, another encoding) goes to the lean or
bare parent with the offer to move to the scientific one (`judge.sandbox.zygote.upgrade`), which
costs the first attempt's start.  Programs of one template share their first lines, so
`Shapes` remembers, per *shape* (the first `PREFIX_CHARS` characters of the source), how often
recent programs took the offer; when most of them did, the next one of that shape starts in the
scientific parent directly.  One in `EXPLORE_EVERY` of those still starts where the scan says, with
the offer, so the memory follows a change in the traffic.

A guess only chooses where a program starts: a program sent to the scientific parent by a guess
runs as one whose source names sympy would, so a wrong guess costs time (a larger parent's fork and
exit), never an answer.  The memory is the slot server's, lost with it; at most `MAX_SHAPES` shapes.
"""

from __future__ import annotations

import binascii

PREFIX_CHARS = 240
"""How much of the start of a source makes its shape (a template's header, not the model's code)."""
MAX_SHAPES = 512
EXPLORE_EVERY = 8
WEIGHT = 0.5
"""Weight of the newest observation in a shape's running share of programs that took the offer."""
THRESHOLD = 0.6


MIN_PAYLOAD_CHARS = 12
"""Shorter base64-looking runs (identifiers, hex digests) are not read as payloads."""
MAX_PAYLOAD_CHARS = 1 << 20
"""At most this much base64 text is decoded per source (the rest stays unread)."""
_ALPHABET = b'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/'
_RUNS = bytes(c if c in _ALPHABET else {45: 43, 95: 47}.get(c, 32) for c in range(256))
"""Byte table: the base64 alphabet kept, the URL-safe ``-`` and ``_`` read as ``+`` and ``/``, any
other byte (padding included: it is added back as needed) a space, so that splitting leaves the runs."""


def shown_payloads(source: str, depth: int = 2) -> str:
    """The text that the base64 payloads of ``source`` decode to (standard or URL-safe alphabet,
    padded or not; only runs that decode to UTF-8 text), a line each, and the payloads found in
    those, ``depth`` levels down; empty when there is none.  A source that does not mention ``64``
    (``b64decode``, ``a2b_base64``, the ``base64`` codec) is not searched: it cannot decode any."""
    if '64' not in source:
        return ''
    found: list[str] = []
    budget = MAX_PAYLOAD_CHARS
    for run in source.encode('ascii', 'replace').translate(_RUNS).split():  # one pass in C, not a regex
        if len(run) < MIN_PAYLOAD_CHARS:
            continue
        if len(run) > budget:
            break
        budget -= len(run)
        try:
            text = binascii.a2b_base64(run + b'=' * (-len(run) % 4), strict_mode=True).decode()
        except (binascii.Error, ValueError):  # not base64, or not text (UnicodeDecodeError is a ValueError)
            continue
        found.append(text)
    shown = '\n'.join(found)
    if shown and depth > 1:
        deeper = shown_payloads(shown, depth - 1)
        if deeper:
            shown += '\n' + deeper
    return shown


class _Shape:
    __slots__ = ('guesses', 'seen', 'share')

    def __init__(self) -> None:
        self.share = 0.0
        self.seen = 0
        self.guesses = 0


class Shapes:
    """Per-shape memory of programs that asked for the scientific parent after starting elsewhere."""

    def __init__(self) -> None:
        self._shapes: dict[str, _Shape] = {}

    def guess_scientific(self, source: str) -> bool:
        """Whether a program of this shape should start in the scientific parent (some guesses are
        skipped on purpose, to keep learning: see the module's doc)."""
        shape = self._shapes.get(source[:PREFIX_CHARS])
        if shape is None or shape.seen < 2 or shape.share < THRESHOLD:
            return False
        shape.guesses += 1
        return shape.guesses % EXPLORE_EVERY != 0

    def learn(self, source: str, upgraded: bool) -> None:
        """A program of this shape that started outside the scientific parent did or did not ask for it."""
        key = source[:PREFIX_CHARS]
        shape = self._shapes.pop(key, None)
        if shape is None:
            shape = _Shape()
            if len(self._shapes) >= MAX_SHAPES:
                del self._shapes[next(iter(self._shapes))]  # the least recently learned
        took = 1.0 if upgraded else 0.0
        shape.share = shape.share + WEIGHT * (took - shape.share) if shape.seen else took
        shape.seen += 1
        self._shapes[key] = shape  # re-inserted: most recently learned last

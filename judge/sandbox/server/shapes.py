"""Which warm parent a program needs when its source does not show it: learned from its shape.

The source scan (`judge.sandbox.server.parents.WarmParents.choose`) sees imports that are written
out.  A program that hides them (a client's template running base64 text through ``exec``) goes to
the lean or bare parent with the offer to move to the scientific one (`judge.sandbox.zygote.upgrade`),
which costs the first attempt's start.  Programs of one template share their first lines, so
`Shapes` remembers, per *shape* (the first `PREFIX_CHARS` characters of the source), how often
recent programs took the offer; when most of them did, the next one of that shape starts in the
scientific parent directly.  One in `EXPLORE_EVERY` of those still starts where the scan says, with
the offer, so the memory follows a change in the traffic.

A guess only chooses where a program starts: a program sent to the scientific parent by a guess
runs as one whose source names sympy would, so a wrong guess costs time (a larger parent's fork and
exit), never an answer.  The memory is the slot server's, lost with it; at most `MAX_SHAPES` shapes.
"""

from __future__ import annotations

PREFIX_CHARS = 240
"""How much of the start of a source makes its shape (a template's header, not the model's code)."""
MAX_SHAPES = 512
EXPLORE_EVERY = 8
WEIGHT = 0.5
"""Weight of the newest observation in a shape's running share of programs that took the offer."""
THRESHOLD = 0.6


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

"""Every Redis name the judge uses, for one broker shard: queues, their lists, and our own keys.

Celery's queues live in kombu's Redis layout: one list per queue and priority step, named
``<queue>`` for step 0 and ``<queue><sep><step>`` otherwise.  The judge's own keys all start with
`KeySpace.prefix`:

* ``judge:reply:<request>``: the list a request's results are pushed to (fast path);
* ``judge:live:<request>``: exists while a request waits; gone means Redis lost its data;
* ``judge:cancelled``: ZSET of reply keys whose client went away (score: expiry, epoch seconds);
* ``judge:nodes``: hash of worker node name -> JSON of its sandbox tier and toolchains;
* ``judge:reconnects``: hash of worker node name -> JSON of its broker reconnections;
* ``judge:inflight``: hash of gateway process -> submissions it admitted and has not answered, and
  ``judge:gateways``: ZSET of gateway processes scored by when their lease ends (the cluster-wide
  in-flight cap, `judge.transport.gateway.admission`; kept in the first shard only);
* ``judge:door:<token>``: a compatible door's submission kept to be fetched by token (the Judge0
  door), with its own expiry (`judge.transport.gateway.records`; first shard only).
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass

QUEUE_RUN = 'judge.run'
"""Queue of single `/run` and `/judge` submissions."""
QUEUE_BATCH = 'judge.batch'
"""Queue of the normal batch routes (and `/judge/tests`)."""
QUEUE_LONG = 'judge.long'
"""Queue of the long-batch routes."""
QUEUES = (QUEUE_RUN, QUEUE_BATCH, QUEUE_LONG)
"""Every queue, in the order a worker takes from them (the first non-empty one wins)."""

# Redis transport: 0 is the highest priority, 9 the lowest (docs/transport.md, "Priorities").  With
# one priority step per queue (below) the queues' order is what ranks the routes; messages still carry these.
PRIORITY_RUN = 1
PRIORITY_BATCH = 4
PRIORITY_LONG = 7

SEP = ':'
"""kombu's ``sep`` (its default is ``'\\x06\\x16'``): readable list names such as ``judge.run:3``."""
PRIORITY_STEPS = (0,)
"""kombu's ``priority_steps``: one list per queue, so a worker's BRPOP names 3 keys, not 30."""


@dataclass(frozen=True)
class KeySpace:
    """The names of one shard's keys (see the module docstring)."""

    prefix: str = 'judge:'
    sep: str = SEP
    priority_steps: tuple[int, ...] = PRIORITY_STEPS
    queues: tuple[str, ...] = QUEUES

    @property
    def cancelled(self) -> str:
        """ZSET of abandoned reply keys, scored by expiry."""
        return f'{self.prefix}cancelled'

    @property
    def nodes(self) -> str:
        """Hash: worker node name -> JSON of its node information."""
        return f'{self.prefix}nodes'

    @property
    def reconnects(self) -> str:
        """Hash: worker node name -> JSON of its broker reconnections (count, last outage)."""
        return f'{self.prefix}reconnects'

    @property
    def in_flight(self) -> str:
        """Hash: gateway process -> submissions in flight."""
        return f'{self.prefix}inflight'

    @property
    def gateways(self) -> str:
        """ZSET: gateway process -> end of its lease (epoch seconds, Redis's clock)."""
        return f'{self.prefix}gateways'

    @property
    def slots(self) -> str:
        """Hash: ``<node>/<slot>`` -> JSON of that sandbox slot's information (its memory)."""
        return f'{self.prefix}slots'

    def reply(self, request_id: str, attempt: int = 0) -> str:
        """The reply list of one request's ``attempt`` (0: the first publish; n: the n-th republish)."""
        return f'{self.prefix}reply:{request_id}' + (f'.{attempt}' if attempt else '')

    def door_record(self, token: str) -> str:
        """A door's submission record, fetched by token."""
        return f'{self.prefix}door:{token}'

    def live(self, request_id: str) -> str:
        """The liveness key of one request."""
        return f'{self.prefix}live:{request_id}'

    def queue_list(self, queue: str, priority: int) -> str:
        """The list kombu keeps ``queue``'s messages of ``priority`` in."""
        steps = self.priority_steps
        step = steps[max(0, bisect.bisect(steps, priority) - 1)]
        return f'{queue}{self.sep}{step}' if step else queue

    def queue_lists(self) -> list[tuple[str, int, str]]:
        """``(queue, step, list name)`` of every list that can hold messages."""
        return [(q, step, f'{q}{self.sep}{step}' if step else q) for q in self.queues for step in self.priority_steps]

    def request_patterns(self) -> tuple[str, ...]:
        """SCAN patterns of the per-request keys (a finished request leaves none for long)."""
        return (f'{self.prefix}reply:*', f'{self.prefix}live:*')

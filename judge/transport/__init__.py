"""How submissions and results move between the gateway and the workers; nothing else does.

Grouped by the process that runs each module; what both run stays here.

Shared, from names to wires:

* `keys`: every Redis name (queues and their lists, reply/live/cancel/node keys) and the lanes;
* `connect`, `shard`: one Redis (a `Shard`: address, clients, key space), queue lengths, node info;
* `config`: what the path changes in Celery's settings (``celeryconfig.py`` reads it);
* `judge.transport.sessions`: live sessions (their state in Redis, the gateway's calls to their nodes);
* `judge.transport.internals`: every module that relies on a library's internals (the fast path's
  `envelope`, `packed`, `kombu_redis`, `consumer`, `request`); its ``__init__`` lists each internal
  and verifies them at start-up.  Everything else here uses public APIs only.

`judge.transport.gateway`, the gateway process only:

* `lanes`: each kind of request's queue, priority and deadline;
* `dispatch`: the gateway's `Dispatcher` for one shard (publish a request, wait with a deadline,
  cancel, ride out broker faults and publish again what they cost, with `outage`), on one of two
  paths (`waiting`: what a path does): `fastpath` (prebuilt messages, reply lists) or `stockpath`
  (Celery's public API: ``send_task``, the result backend, ``revoke``), chosen by
  ``JUDGE_TRANSPORT`` (`paths`); `router` spreads a request over the shards; `admission` caps what
  all gateway processes hold in flight;
* `records`: what a compatible door keeps to be fetched later by token.

`judge.transport.worker`, the worker process only:

* `replies`: the worker's side of a request (deliver the result, holding it through an outage; skip
  a cancelled job); `reconnects`: the worker's broker reconnections, counted and reported.

Importing this package imports none of its modules.
"""

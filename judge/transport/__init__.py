"""How submissions and results move between the gateway and the workers; nothing else does.

Layers, from names to wires:

* `keys`: every Redis name (queues and their lists, reply/live/cancel/node keys) and the lanes;
* `connect`, `shard`: one Redis (a `Shard`: address, clients, key space), queue lengths, node info;
* `gateway`: the `Dispatcher` (publish a request, wait with a deadline, cancel, detect data loss),
  on one of two paths: `fastpath` (prebuilt messages, reply lists) or `stockpath` (Celery's public
  API: ``send_task``, the result backend, ``revoke``), chosen by ``JUDGE_TRANSPORT`` (`paths`);
* `replies`: the worker's side of a request (deliver the result, skip a cancelled job);
* `config`: what the path changes in Celery's settings (``celeryconfig.py`` reads it);
* the fast path's overrides of library internals, all listed in `internals`: `envelope`,
  `packed`, `kombu_redis`, `consumer`, `request`.

Importing this package imports none of its modules.
"""

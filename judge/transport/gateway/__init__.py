"""The transport as the gateway process runs it: lanes, dispatch over the two paths, shards, the cap.

* `lanes`: each kind of request's queue, priority and deadline, built once from the settings;
* `paths`: the dispatchers, one per broker shard, on the path ``JUDGE_TRANSPORT`` names;
* `router`: spreads a request over the shards and reruns what a failed shard held;
* `dispatch`: one shard's `Dispatcher` (publish, wait with a deadline, cancel, ride out broker
  faults), through a path (`waiting`: what a path does): `fastpath` or `stockpath`;
* `outage`: broker faults as the gateway sees them (detecting, waiting, counting);
* `admission`: the in-flight cap of all gateway processes together;
* `records`: what a compatible door keeps to be fetched later by token.

Nothing here runs in a worker (`tests/unit/test_layering.py`).  Importing this package imports none
of its modules.
"""

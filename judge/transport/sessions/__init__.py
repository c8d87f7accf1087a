"""Live sessions' transport (docs/sessions.md): their state in Redis and the gateway's calls to their nodes.

* `store`: each session's record, cells and lock, and which worker nodes are alive (the gateway's
  `SessionStore`, asyncio; the worker's `SessionRecords`, blocking), and the node queues' names;
* `calls`: the gateway sends one session job through Celery to the node's own queue and waits for it;
* `gateway`: the gateway's session operations (create, run a cell, fork, close, describe), each placed,
  locked and sent again when its node is lost.

Importing this package imports none of its modules.
"""

"""The transport as the worker process runs it: its replies and its broker reconnections.

* `replies`: deliver a job's result (to its reply list on the fast path, back to Celery's result
  backend on the stock path), holding it through an outage; skip a job whose client went away;
* `reconnects`: the consumer bootstep that logs, counts and reports each broker reconnection.

Nothing here runs in the gateway (`tests/unit/test_layering.py`).  Importing this package imports
none of its modules.
"""

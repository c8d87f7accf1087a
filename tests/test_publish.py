"""Messages the gateway writes itself (api/publish.py) against the ones Celery and kombu write."""

from __future__ import annotations

import base64
import json
import uuid
from typing import Any

import redis

from api.publish import TaskMessages
from judge.app import app
from judge.contracts import PRIORITY_BATCH, PRIORITY_LONG, PRIORITY_RUN, RUN_TASK
from tests.conftest import Stack

_VARYING = {'id', 'root_id', 'expires', 'origin', 'correlation_id', 'delivery_tag', 'reply_to'}


def _strip(d: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in d.items() if k not in _VARYING}


def test_list_keys_follow_kombu_priority_steps() -> None:
    messages = TaskMessages(app)
    assert messages.steps == (0,)  # celeryconfig: one list per queue, the queues' order is the priority
    for queue, priority in (('judge.run', PRIORITY_RUN), ('judge.batch', PRIORITY_BATCH), ('q', 0)):
        assert messages.list_key(queue, priority) == queue
    messages.steps = (0, 3, 6, 9)  # kombu's default steps: a priority goes to the step at or below it
    assert [messages.list_key('q', p) for p in (0, 2, 3, PRIORITY_LONG, 9)] == ['q', 'q', 'q:3', 'q:6', 'q:9']


def test_envelope_matches_what_kombu_writes(stack: Stack) -> None:
    queue = f'test-publish-{uuid.uuid4().hex}'
    args = ({'sub_id': 's1', 'type': 'python', 'solution': 'print("é")', 'input': ''}, 'judge:reply:x', 3, 'b1')
    client = redis.Redis.from_url(stack.redis_url)
    conn = app.connection_for_write(stack.redis_url)
    messages = TaskMessages(app)
    key = messages.list_key(queue, PRIORITY_BATCH)
    same: dict[str, Any] = {'queue': queue, 'priority': PRIORITY_BATCH, 'group_id': 'b1', 'group_index': 3}
    try:
        with app.producer_or_acquire(app.producer_pool.Producer(conn)) as producer:
            app.send_task(
                RUN_TASK,
                args=args,
                routing_key=queue,
                producer=producer,
                ignore_result=True,
                expires=30.0,
                argsrepr='(x)',
                kwargsrepr='{}',
                **same,
            )
        theirs = json.loads(client.rpop(key) or b'null')
        ours = json.loads(messages.build(RUN_TASK, args, expires_s=30.0, argsrepr='(x)', **same))
    finally:
        client.delete(key, queue)
        conn.release()
    assert theirs is not None, f'kombu wrote nothing to {key}'
    assert set(ours) == set(theirs)
    assert _strip(ours['headers']) == _strip(theirs['headers'])
    assert _strip(ours['properties']) == _strip(theirs['properties'])
    assert ours['headers']['expires'][:16] == theirs['headers']['expires'][:16]  # same minute
    assert json.loads(base64.b64decode(ours['body'])) == json.loads(base64.b64decode(theirs['body']))
    for field in ('content-type', 'content-encoding'):
        assert ours[field] == theirs[field]

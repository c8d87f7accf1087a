"""The worker's task (`judge.worker.tasks`): the job it takes, in this release's form and the previous one's."""

from __future__ import annotations

from judge.contracts import Submission
from judge.worker.tasks import as_job


def test_the_job_carries_the_payload_and_where_to_answer() -> None:
    payload = Submission.model_validate({'type': 'python', 'solution': 'print(1)', 'options': {'x': 'y'}}).payload()
    assert set(payload) == {'sub_id', 'type', 'solution', 'input', 'expected_output'}  # options stay home
    job = {'sub': payload, 'reply_to': 'judge:reply:r', 'index': 2, 'batch': 'b'}
    assert as_job((job,)) == job
    # A message queued by the previous release: (sub, reply_to, index, batch).
    assert as_job((payload, 'judge:reply:r', 2, 'b')) == job
    assert as_job((payload, 'judge:reply:r', 2)) == {**job, 'batch': ''}
    assert as_job(()) is None and as_job(('x',)) is None

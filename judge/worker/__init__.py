"""The Celery pool process: the task, the service around its sandbox slot, the runner, error cases."""

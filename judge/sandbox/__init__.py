"""Running untrusted programs: per-slot servers, jails and limits.  Knows nothing of Celery."""

"""Running untrusted programs: per-slot servers, jails and limits.  Knows nothing of Celery.

By process:

* this package's own modules are what a worker pool process uses (`client`: start a slot server and
  send it executions; `slots`: host-wide slot numbers; `limits`, `protocol`, `errors`), plus what
  every sandbox process shares (`fdio`, `lazylog`) and the seeded-run start-up hook (`seedhook`);
* `judge.sandbox.server`: the slot server, one small process per worker slot (jail, executions,
  clean-up, its warm parents);
* `judge.sandbox.zygote`: the warm parent (zygote) process and what its forked children do before
  the program runs;
* `judge.sandbox.kernel`: kernel interfaces (libc, namespaces, Landlock, seccomp, cgroups).

Importing this package imports none of its modules: the warm parents import from it and must stay light.
"""

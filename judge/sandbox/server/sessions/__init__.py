"""The session host: live Python sessions of one worker node (docs/sessions.md).

`host` (the process), `ops` (its operations), `registry` (TTL, memory budget, evictions), `process`
(one session process and one cell), `forking` (fork and the checks after it), `space` (families,
uids, work dirs, Landlock layers), `cgroup` (each session's cgroups and freezer).  The session process
itself is `judge.sandbox.zygote.session`.
"""

"""An execution's files on the slot server's side: what goes into and comes out of its work dir
(`workdir`), the per-execution tmpfs space in the ``namespaces`` tier (`spaces`), and removing what
an execution wrote, whatever its shape (`cleanup`)."""

"""The slot server: one small process per worker slot that prepares the jail once and runs executions.

Stdlib only; started as a script by `judge.sandbox.client`."""

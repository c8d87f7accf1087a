"""The client toolkit (client, sessions, rewards, evaluation, benchmarks) against a real stack."""

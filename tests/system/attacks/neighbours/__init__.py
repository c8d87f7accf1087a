"""Attacks between submissions: channels and counters between slots, shared secrets, leftovers,
CPU starvation, signals."""

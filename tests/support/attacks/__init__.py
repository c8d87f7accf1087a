"""The attack suite's shared parts: the kit every attack file uses (submissions, the safety gate, slot
health), the main batch and its programs, and the programs of the channel attacks between slots."""

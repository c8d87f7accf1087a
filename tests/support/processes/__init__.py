"""The processes tests start: Redis, workers, gateways, slot servers and session hosts, and the host's view of them."""

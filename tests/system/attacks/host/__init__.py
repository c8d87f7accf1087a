"""Attacks on the host and on the judge itself: its files, network, privileges, core-dump helpers and internals."""

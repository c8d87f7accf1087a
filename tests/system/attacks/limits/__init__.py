"""Attacks on the limits: bombs, raised rlimits, children that outlive their run, processes nobody reaps."""

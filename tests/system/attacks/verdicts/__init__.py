"""Attacks on the verdict: forged infrastructure errors through the compiler; every case judged, slots that heal."""

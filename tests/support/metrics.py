"""Reading a gateway's Prometheus `/metrics` over real HTTP."""

from __future__ import annotations

import urllib.request

from prometheus_client.parser import text_string_to_metric_families

Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]


def scrape(url: str) -> Samples:
    """All samples of ``url``/metrics keyed by (name, labels)."""
    with urllib.request.urlopen(url + '/metrics', timeout=10) as resp:
        assert resp.status == 200
        assert resp.headers['content-type'].startswith('text/plain')
        text = resp.read().decode()
    return {
        (s.name, frozenset(s.labels.items())): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def value(samples: Samples, name: str, **labels: str) -> float:
    """One sample's value, 0 when absent (a labelled counter appears on first use)."""
    return samples.get((name, frozenset(labels.items())), 0.0)


def total(samples: Samples, name: str, **labels: str) -> float:
    """Sum of the samples of ``name`` whose labels include ``labels``."""
    want = set(labels.items())
    return sum(v for (n, ls), v in samples.items() if n == name and want <= ls)

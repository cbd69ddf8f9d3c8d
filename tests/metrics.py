"""Reading a ``/metrics`` page in tests and benchmarks, with prometheus_client's own parser of
the text format."""

from __future__ import annotations

from prometheus_client.parser import text_string_to_metric_families

Samples = dict[str, list[tuple[dict[str, str], float]]]
"""Sample name (``guts_requests_total``, ``guts_wallet_call_seconds_count``, ...) -> each of its
samples' labels and value."""


def samples(text: str) -> Samples:
    """Every sample of a page in the Prometheus text format, by sample name."""
    found: Samples = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            found.setdefault(sample.name, []).append((dict(sample.labels), sample.value))
    return found


def total(found: Samples, name: str, **labels: str) -> float:
    """The sum of `name`'s samples whose labels include `labels` (0 when there is none)."""
    return sum(value for have, value in found.get(name, []) if labels.items() <= have.items())

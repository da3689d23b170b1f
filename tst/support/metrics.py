"""A server's `/metrics`, scraped and read as Prometheus does."""

from __future__ import annotations

import httpx
from prometheus_client.parser import text_string_to_metric_families

Samples = dict[tuple[str, tuple[tuple[str, str], ...]], float]
"""Every sample of a scrape: (name, its labels sorted) -> value."""


def scrape(url: str) -> Samples:
    """`GET {url}/metrics`, checked to be Prometheus' text format, parsed by Prometheus' own parser."""
    answer = httpx.get(f"{url}/metrics", timeout=10)
    assert answer.status_code == 200
    assert answer.headers["content-type"] == "text/plain; version=0.0.4; charset=utf-8"
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(answer.text)
        for sample in family.samples
    }

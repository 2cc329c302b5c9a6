"""`GET /metrics` read back as Prometheus samples."""

from __future__ import annotations

from fastapi.testclient import TestClient
from prometheus_client.parser import text_string_to_metric_families


def scrape(api: TestClient) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """Every sample of the scrape: (name, sorted labels) → value."""
    response = api.get("/metrics")
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/plain")
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(response.text)
        for sample in family.samples
    }

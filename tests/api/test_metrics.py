"""``GET /metrics``: Prometheus text format behind the API key, and figures that move.

Driven through the real HTTP stack (the app with its lifespan and middleware, over ASGI);
the exposition is parsed with ``prometheus_client``'s own parser.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta

import pytest
from prometheus_client.parser import text_string_to_metric_families

from initiator.observability.fleet import STALE_AFTER
from shared.contracts.batch_status import BatchStatus
from tests.api.batch_files import csv_file, rows
from tests.api.harness import AUTH, CSV, Api
from tests.dashboard.heartbeats import Figures, write_beat

pytestmark = pytest.mark.anyio

#: (sample name, sorted label pairs) -> value
Samples = dict[tuple[str, tuple[tuple[str, str], ...]], float]


async def scrape(api: Api) -> tuple[dict[str, str], Samples]:
    """The metric families' types and every sample of one scrape."""
    response = await api.client.get("/metrics", headers=AUTH)
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/plain; version=0.0.4")
    types: dict[str, str] = {}
    samples: Samples = {}
    for family in text_string_to_metric_families(response.text):
        types[family.name] = family.type
        for sample in family.samples:
            key = (sample.name, tuple(sorted(sample.labels.items())))
            assert key not in samples, f"duplicate series {key}"
            samples[key] = sample.value
    return types, samples


async def scrape_until(api: Api, done: Callable[[Samples], bool], timeout: float = 10.0) -> Samples:
    """Scrape until ``done`` holds: batch and processor figures are cached a few seconds."""
    deadline = time.monotonic() + timeout
    while True:
        _, samples = await scrape(api)
        if done(samples) or time.monotonic() > deadline:
            return samples
        await asyncio.sleep(0.2)


def batches(samples: Samples, status: BatchStatus) -> float:
    return samples[("billing_batches", (("status", status.value),))]


def storage_requests(samples: Samples, kind: str) -> float:
    return samples.get(("billing_storage_requests_total", (("kind", kind),)), 0.0)


@pytest.fixture
def backend() -> str:
    """Authentication and the format do not depend on the storage backend."""
    return "embedded"


@pytest.mark.parametrize(
    "headers",
    [{}, {"Authorization": "Bearer not-the-key"}, {"Authorization": "Basic test-key-1"}],
    ids=["no key", "wrong key", "basic scheme"],
)
async def test_metrics_answer_401_without_a_valid_key(api: Api, headers: dict[str, str]) -> None:
    response = await api.client.get("/metrics", headers=headers)
    assert response.status_code == 401
    assert response.headers["www-authenticate"] == "Bearer"
    assert "billing_" not in response.text


async def test_exposition_parses_with_every_family_typed(api: Api) -> None:
    await api.client.get("/healthz")  # at least one HTTP request counted before the scrape
    types, samples = await scrape(api)
    assert types["billing_storage_requests"] == "counter"
    assert types["billing_batches"] == "gauge"
    assert types["billing_processor_instances"] == "gauge"
    assert types["billing_processor_dequeue_threads"] == "gauge"
    assert types["billing_http_requests"] == "counter"
    assert types["billing_http_request_duration_seconds"] == "histogram"
    assert "process_resident_memory_bytes" in types
    # every status has its series, zeros included, so a dashboard query never sees a gap
    assert {status: batches(samples, status) for status in BatchStatus} == dict.fromkeys(
        BatchStatus, 0.0
    )
    assert samples[("billing_processor_instances", ())] == 0
    healthz = (("method", "GET"), ("route", "/healthz"), ("status", "200"))
    assert samples[("billing_http_requests_total", healthz)] == 1


@pytest.mark.parametrize(
    "backend", ["embedded", pytest.param("azurite", marks=pytest.mark.azurite)]
)
async def test_counts_move_after_a_post(api: Api) -> None:
    _, before = await scrape(api)
    response = await api.client.post("/batches", content=csv_file(rows(25)), headers=CSV)
    assert response.status_code == 202
    chunks = response.json()["chunks"]
    assert chunks == 3  # 25 rows at the tests' chunk size of 10

    after = await scrape_until(api, lambda s: batches(s, BatchStatus.ACCEPTED) == 1)
    assert batches(after, BatchStatus.ACCEPTED) == 1
    # The payload chunks and their work items are billed requests of this process.
    assert storage_requests(after, "blob.put") - storage_requests(before, "blob.put") >= chunks
    assert storage_requests(after, "queue.put") - storage_requests(before, "queue.put") >= chunks
    post = (("method", "POST"), ("route", "/batches"), ("status", "202"))
    assert after[("billing_http_requests_total", post)] == 1
    assert after[("billing_http_request_duration_seconds_count", post[:2])] == 1


@pytest.mark.parametrize(
    "backend", ["embedded", pytest.param("azurite", marks=pytest.mark.azurite)]
)
async def test_live_processors_and_their_threads(api: Api) -> None:
    table = api.services.storage.table(api.settings.heartbeats_table)
    write_beat(table, "proc-a", Figures(active_threads=2, total_threads=3, queue_depth=40))
    write_beat(table, "proc-b", Figures(active_threads=1, total_threads=1, queue_depth=7))
    write_beat(table, "proc-stopped", status="stopped")
    write_beat(
        table, "proc-silent", taken_at=datetime.now(UTC) - STALE_AFTER - timedelta(minutes=1)
    )

    samples = await scrape_until(api, lambda s: s.get(("billing_processor_instances", ())) == 2)
    assert samples[("billing_processor_instances", ())] == 2
    threads = {
        labels: value
        for (name, labels), value in samples.items()
        if name == "billing_processor_dequeue_threads"
    }
    assert threads == {
        (("processor", "proc-a"), ("state", "active")): 2,
        (("processor", "proc-a"), ("state", "total")): 3,
        (("processor", "proc-b"), ("state", "active")): 1,
        (("processor", "proc-b"), ("state", "total")): 1,
    }
    assert samples[("billing_processor_queue_depth", (("processor", "proc-a"),))] == 40
    assert samples[("billing_processor_handled_total", (("processor", "proc-b"),))] == 12
    # No series carries "instance": Prometheus adds that label itself, for the target.
    assert not [key for key in samples if "instance" in dict(key[1])]


async def test_handling_latency_is_a_histogram_per_processor(api: Api) -> None:
    table = api.services.storage.table(api.settings.heartbeats_table)
    write_beat(table, "proc-a", Figures(handled=12, latency_seconds=0.04))
    types, _ = await scrape(api)
    samples = await scrape_until(
        api,
        lambda s: (
            ("billing_processor_handling_duration_seconds_count", (("processor", "proc-a"),)) in s
        ),
    )
    types, _ = await scrape(api)
    assert types["billing_processor_handling_duration_seconds"] == "histogram"
    proc_a = (("processor", "proc-a"),)

    def bucket(le: str) -> float:
        return samples[
            ("billing_processor_handling_duration_seconds_bucket", (("le", le), *proc_a))
        ]

    assert bucket("0.025") == 0
    assert bucket("0.05") == 12
    assert bucket("+Inf") == 12
    assert samples[("billing_processor_handling_duration_seconds_count", proc_a)] == 12
    assert samples[("billing_processor_handling_duration_seconds_sum", proc_a)] == pytest.approx(
        0.48
    )
    assert "billing_processor_p95_latency_seconds" not in types


async def test_static_files_are_counted_under_their_route_not_unmatched(api: Api) -> None:
    for asset in ("dashboard.js", "dashboard.css", "no-such.js"):
        await api.client.get(f"/static/{asset}")
    await api.client.get("/no/such/route")
    _, samples = await scrape(api)
    static = {
        labels: value
        for (name, labels), value in samples.items()
        if name == "billing_http_requests_total" and dict(labels)["route"] == "/static"
    }
    assert sum(static.values()) == 3
    unmatched = (("method", "GET"), ("route", "unmatched"), ("status", "404"))
    assert samples[("billing_http_requests_total", unmatched)] == 1

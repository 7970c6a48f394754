"""``GET /dashboard/live``: the sampler's latest reading and its history, over HTTP.

On the embedded backend and on Azurite: the depths come from real queue depth queries.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest

from initiator.observability.live import queue_infos
from initiator.observability.readings import Readings
from initiator.observability.sampler import Sampler
from shared import meter
from shared.cost.estimate import requests_cost
from shared.cost.prices import AzurePrices
from shared.storage.ports import Entity
from tests.api.batch_files import csv_file, rows
from tests.api.harness import AUTH, CSV, Api
from tests.dashboard.heartbeats import Figures, write_beat, write_older_beat

pytestmark = pytest.mark.anyio

#: The meter's kind of the sampler's depth queries: labelled as the dashboard's.
DEPTH_QUERY = "queue.count@dashboard"


async def live(api: Api, after: int = 0) -> dict[str, Any]:
    response = await api.client.get("/dashboard/live", params={"after": after}, headers=AUTH)
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


def sampler_of(api: Api) -> Sampler:
    sampler: Sampler = api.app.state.sampler
    return sampler


async def test_live_needs_the_api_key(api: Api) -> None:
    for headers in ({}, {"Authorization": "Bearer not-the-key"}):
        response = await api.client.get("/dashboard/live", headers=headers)
        assert response.status_code == 401
        assert "samples" not in response.text


async def test_live_shows_every_queue_the_batch_and_the_processors(api: Api) -> None:
    table = api.services.storage.table(api.settings.heartbeats_table)
    write_beat(table, "proc-a", Figures(active_threads=2, total_threads=3, queue_depth=7))
    accepted = await api.post_batch(csv_file(rows(25)), CSV, priority="high")
    batch_id = accepted.json()["batch_id"]
    sampler_of(api).sample_once()  # a reading taken after the batch, whatever the thread did

    body = await live(api)

    settings = api.settings
    names = [queue["name"] for queue in body["queues"]]
    assert len(names) == 2 * 3 * settings.partitions + 1  # work and poison, and the results
    assert names[-1] == settings.output_queue
    high = [q for q in body["queues"] if q["kind"] == "work" and q["priority"] == "high"]
    assert [q["partition"] for q in high] == list(range(settings.partitions))

    latest = body["samples"][-1]
    assert set(latest["queue_depths"]) == set(names)
    high_depth = sum(latest["queue_depths"][q["name"]] for q in high)
    assert high_depth == 3  # 25 transactions in chunks of 10
    assert sum(latest["queue_depths"].values()) == 3
    assert latest["processors"] == [
        {
            "instance": "proc-a",
            "active": 2,
            "peak_active": 3,  # all three ran at once before one retired
            "total": 3,
            "queue_depth": 7,
            "beat_age_seconds": pytest.approx(latest["processors"][0]["beat_age_seconds"]),
        }
    ]

    [progress] = [b for b in body["batches"] if b["batch"]["batch_id"] == batch_id]
    assert progress["batch"]["chunks"] == {
        "total": 3,
        "rated": 0,
        "applied": 0,
        "failed": 0,
        "in_flight": 3,
    }
    assert progress["applied_transactions"] == 0
    assert progress["elapsed_seconds"] >= 0
    assert body["batch_counts"]["accepted"] == 1
    [processor] = body["processors"]
    assert processor["beat_age_seconds"] >= 0
    assert body["age_seconds"] >= 0
    assert body["sample_seconds"] == sampler_of(api).interval


async def test_samples_carry_each_beats_peak_and_an_older_beat_reads_as_its_count(
    api: Api,
) -> None:
    table = api.services.storage.table(api.settings.heartbeats_table)
    write_beat(table, "proc-new", Figures(active_threads=0, total_threads=4))  # a burst, gone
    write_older_beat(table, "proc-old", Figures(active_threads=2, total_threads=5))
    sampler_of(api).sample_once()

    body = await live(api)

    threads = {p["instance"]: p for p in body["samples"][-1]["processors"]}
    assert (threads["proc-new"]["active"], threads["proc-new"]["peak_active"]) == (0, 4)
    assert (threads["proc-old"]["active"], threads["proc-old"]["peak_active"]) == (2, 2)
    processors = {p["instance"]: p for p in body["processors"]}
    assert processors["proc-new"]["peak_active_threads"] == 4
    assert processors["proc-old"]["peak_active_threads"] == 2


async def test_a_poll_after_a_seq_gets_only_newer_samples(api: Api) -> None:
    first = await live(api)
    last_seq = first["samples"][-1]["seq"]
    sampler_of(api).sample_once()
    sampler_of(api).sample_once()

    newer = (await live(api, after=last_seq))["samples"]

    seqs = [sample["seq"] for sample in newer]
    assert len(seqs) >= 2
    assert seqs == sorted(seqs)
    assert seqs[0] == last_seq + 1


async def test_nobody_watching_costs_no_depth_query_and_a_poll_starts_the_sampler(
    api: Api,
) -> None:
    sampler = sampler_of(api)
    before = meter.snapshot()
    await asyncio.sleep(sampler.interval * 1.5)
    assert meter.diff(meter.snapshot(), before).get(DEPTH_QUERY, 0) == 0
    assert len(sampler.ring) == 0

    await live(api)  # a viewer: the sampler takes readings until nobody has asked for a minute
    deadline = time.monotonic() + 10 * sampler.interval
    while len(sampler.ring) < 2 and time.monotonic() < deadline:
        await asyncio.sleep(0.1)
    assert len(sampler.ring) >= 2
    queues = len((await live(api))["queues"])
    # The first sample asks every queue (the later ones only those that can have changed).
    assert meter.diff(meter.snapshot(), before)[DEPTH_QUERY] >= queues


async def test_many_viewers_cost_one_sampler(api: Api) -> None:
    queues = len((await live(api))["queues"])
    sampler = sampler_of(api)
    before_seq = sampler.ring.next_seq()
    before = meter.snapshot()
    started = time.monotonic()
    await asyncio.gather(*(live(api) for _ in range(20)))
    await asyncio.sleep(sampler.interval)
    samples = sampler.ring.next_seq() - before_seq
    queries = meter.diff(meter.snapshot(), before).get(DEPTH_QUERY, 0)
    elapsed = time.monotonic() - started
    # However many polls came in, the depth queries are one sampler's: a sample's worth each
    # (and perhaps a sample under way as the count was read).
    assert samples <= elapsed / sampler.interval + 1
    assert queries <= (samples + 1) * queues


async def test_the_sampler_asks_only_the_queues_whose_depth_can_have_changed(api: Api) -> None:
    queues = [api.services.storage.queue(q.name) for q in queue_infos(api.settings)]
    poison = [q for q in queues if q.name.endswith("-poison")]
    clock = [0.0]
    sampler = Sampler(
        queues, Readings(api.services, ttl=0), rescan_seconds=60, clock=lambda: clock[0]
    )
    table = api.services.storage.table(api.settings.heartbeats_table)

    def asked() -> int:
        before = meter.snapshot()
        sampler.sample_once()
        diff = meter.diff(meter.snapshot(), before)
        assert "queue.count" not in diff  # every depth query is labelled the dashboard's
        return diff.get(DEPTH_QUERY, 0)

    try:
        assert asked() == len(queues)  # the first sample: every queue
        assert asked() == 0  # idle: nothing can have changed
        beat = write_beat(table, "proc-a")  # a processor beats when its queues change
        assert asked() == len(queues) - len(poison)
        assert asked() == 0
        table.upsert(Entity(beat.partition_key, beat.row_key, {**beat.properties, "poisoned": 1}))
        assert asked() == len(queues)  # a message poisoned: the poison queues too
        clock[0] += 61
        assert asked() == len(queues)  # the full rescan
        assert asked() == 0
    finally:
        sampler.stop()


async def test_live_is_in_the_openapi_document(api: Api) -> None:
    document = (await api.client.get("/openapi.json", headers=AUTH)).json()
    operation = document["paths"]["/dashboard/live"]["get"]
    assert [p["name"] for p in operation["parameters"]] == ["after"]
    assert "LiveView" in document["components"]["schemas"]
    assert "Sample" in document["components"]["schemas"]
    schemas = document["components"]["schemas"]
    assert (
        "previous beat" in schemas["ProcessorThreads"]["properties"]["peak_active"]["description"]
    )
    assert (
        "older" in schemas["ProcessorInstance"]["properties"]["peak_active_threads"]["description"]
    )


async def test_after_an_unwatched_spell_a_viewer_gets_a_new_reading(api: Api) -> None:
    queues = [api.services.storage.queue(api.settings.output_queue)]
    sampler = Sampler(queues, api.app.state.readings, interval=0.05, watch_seconds=0.2)
    sampler.start()
    try:
        assert sampler.watched() is not None
        # Nobody asks again: within a few samples the sampler stops sampling.
        asleep_at = 0
        for _ in range(50):
            asleep_at = sampler.ring.next_seq()
            await asyncio.sleep(0.3)
            if sampler.ring.next_seq() == asleep_at:
                break
        assert sampler.ring.next_seq() == asleep_at, "the sampler never went to sleep"

        reading = sampler.watched()

        assert reading is not None
        assert reading.sample.seq >= asleep_at  # taken after the viewer came back, not the old one
    finally:
        sampler.stop()


async def test_each_sample_prices_its_requests_at_the_list_prices(api: Api) -> None:
    sampler_of(api).sample_once()
    await api.post_batch(csv_file(rows(25)), CSV)  # payload blobs, work items, records
    sampler_of(api).sample_once()

    latest = (await live(api))["samples"][-1]

    assert latest["requests_per_minute"], "the batch's requests were not sampled"
    expected = requests_cost(latest["requests_per_minute"], AzurePrices())
    assert expected > 0
    assert latest["cost_per_minute"] == pytest.approx(expected)

"""The cost of the billed-id check at intake (``BILLING_DUPLICATE_TRANSACTION_IDS``).

Three initiators run side by side in this process, each the real app (ASGI, lifespan, the
embedded backend in its own folder), all with the duplicate-body check on, so that only the
id check differs:

* ``off``: the id check off (the default);
* ``on``: the id check on, no other batch in the window: the batch's fingerprints, its index
  blob and one listing;
* ``on, full window``: the id check on, with index blobs of earlier batches holding
  ``window_ids`` ids already in the window (downloaded once, untimed, then read from the
  process's cache), which every batch is compared with.

After each POST its own index blob is deleted (untimed), so that the window stays the same
size and the next round's batch, which repeats most ids, is not refused. Bodies differ in
their first transaction id. Rounds interleave the variants (in a rotating order) and the
shapes; each round's ratio pairs POSTs made moments apart, and the median of those ratios
is reported, with their range, because the machine is shared and noisy.
"""

from __future__ import annotations

import statistics
import tempfile
import time
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path

import anyio
import httpx

from bench.in_process import asgi_client, bench_settings, timed_post
from bench.intake_duplicates import FIRST_ID, bench_shapes, shared_pricebook
from bench.report import Report
from bench.shapes import Shape, batch_body
from initiator.id_window import FingerprintPartitions, IdWindow
from initiator.id_window.index import PREFIX
from shared.contracts.batch_records import utc_now
from shared.domain.pricebook_store import PricebookStore
from shared.settings import Settings
from shared.storage import open_storage
from shared.storage.ports import BlobContainer

VARIANTS = ("off", "on", "on, full window")
WINDOW_BATCHES = 5
"""The full window's ids come in this many earlier batches (one index blob each)."""


@dataclass
class _Samples:
    seconds: dict[str, list[float]] = field(default_factory=lambda: {v: [] for v in VARIANTS})
    blob_requests: dict[str, list[dict[str, int]]] = field(
        default_factory=lambda: {v: [] for v in VARIANTS}
    )


def transaction_id_check_cost(report: Report, *, quick: bool, rounds: int) -> None:
    shapes = bench_shapes(quick)
    window_ids = 20_000 if quick else 1_000_000
    bodies = {label: batch_body(shape) for label, shape in shapes.items()}
    samples = anyio.run(_measure, shapes, bodies, rounds, quick, window_ids)
    rows: list[list[str | int | float]] = []
    for label, shape in shapes.items():
        got = samples[label]
        rate = {v: shape.transactions / statistics.median(got.seconds[v]) for v in VARIANTS}
        row: list[str | int | float] = [
            f"{label}: {shape.transactions:,} tx, {len(bodies[label]) / 1e6:.2f} MB",
            rate["off"],
        ]
        prefix = f"transaction_ids.{label}"
        for variant, name in (("on", "on"), ("on, full window", "full_window")):
            ratios = [
                off / on for off, on in zip(got.seconds["off"], got.seconds[variant], strict=True)
            ]
            row += [
                rate[variant],
                statistics.median(ratios),
                f"{min(ratios):.2f}-{max(ratios):.2f}",
            ]
            report.figure(f"{prefix}.{name}.transactions_per_s", rate[variant])
            report.figure(f"{prefix}.{name}_over_off", statistics.median(ratios))
        report.figure(f"{prefix}.off.transactions_per_s", rate["off"])
        added = _added_requests(got)
        row.append(added)
        rows.append(row)
    report.table(
        f"billed-id check: POST /batches with it off and on (embedded, 'base' shape, "
        f"duplicate-body check on in all, {rounds} interleaved rounds, medians; full window: "
        f"{window_ids:,} ids of {WINDOW_BATCHES} earlier batches)",
        [
            "batch",
            "off tx/s",
            "on tx/s",
            "on/off",
            "on/off range",
            "full window tx/s",
            "full/off",
            "full/off range",
            "blob requests added (full window)",
        ],
        rows,
    )
    parts = direct_costs(shapes, window_ids, repeats=3 if quick else 7)
    intake_ms = {label: statistics.median(samples[label].seconds["off"]) * 1000 for label in shapes}
    report.table(
        f"billed-id check: its parts timed alone (embedded, medians of the runs), in ms and "
        f"against the batch's intake time with the check off; window: {window_ids:,} ids",
        ["part", *(f"{label} ms" for label in shapes), *(f"of {label}" for label in shapes)],
        [
            [
                part,
                *(by_label[label] for label in shapes),
                *(f"{by_label[label] / intake_ms[label]:.1%}" for label in shapes),
            ]
            for part, by_label in parts.items()
        ],
    )
    for label in shapes:
        total = sum(by_label[label] for by_label in parts.values())
        report.figure(f"transaction_ids.{label}.parts_ms", total)
        report.figure(f"transaction_ids.{label}.parts_of_intake", total / intake_ms[label])
    report.figure("transaction_ids.window_ids", window_ids)
    report.figure("transaction_ids.window_disk_mb", window_ids * 8 / 1e6)
    small, large = rows[0], rows[-1]
    share = {
        label: sum(by_label[label] for by_label in parts.values()) / intake_ms[label]
        for label in shapes
    }
    report.conclude(
        f"with the billed-id check on and {window_ids:,} ids in the window, intake runs at "
        f"{small[6]:.2f}x its speed without it on a {shapes['small'].transactions:,}-"
        f"transaction batch and {large[6]:.2f}x on {shapes['large'].transactions:,} "
        f"(ratios within the rounds' spread are noise); timed alone, its parts add "
        f"{share['small']:.0%} and {share['large']:.0%} of the intake time; the window's "
        f"fingerprints take {window_ids * 8 / 1e6:.1f} MB of local disk per initiator process"
    )


def direct_costs(
    shapes: dict[str, Shape], window_ids: int, repeats: int
) -> dict[str, dict[str, float]]:
    """The check's parts timed alone for a batch of each shape's size, in ms (medians):
    fingerprints (hash, partition, sort), its own index blob's put, the comparison with a
    window of ``window_ids`` ids already cached."""
    parts: dict[str, dict[str, list[float]]] = {
        "fingerprints: hash, partition, sort": {label: [] for label in shapes},
        "own index blob written": {label: [] for label in shapes},
        "listing and comparison with the window": {label: [] for label in shapes},
    }
    fingerprints, written, compared = parts.values()
    with tempfile.TemporaryDirectory(prefix="bench-transaction-ids-direct-") as folder:
        settings = Settings(_env_file=None, data_dir=Path(folder))  # type: ignore[call-arg]
        storage = open_storage(settings)
        try:
            control = storage.container(settings.control_container)
            control.create()
            _fill_window(control, window_ids)
            window = IdWindow(control, timedelta(days=1))
            for run in range(repeats):
                for label, shape in shapes.items():
                    ids = [f"run-{run}-{n:09d}" for n in range(shape.transactions)]
                    with FingerprintPartitions() as partitions:
                        started = time.perf_counter()
                        for start in range(0, len(ids), 2_000):
                            partitions.add(ids[start : start + 2_000])
                        partitions.finish()
                        fingerprints[label].append(time.perf_counter() - started)
                        started = time.perf_counter()
                        name = window.publish(f"run-{run}-{label}", utc_now(), partitions)
                        written[label].append(time.perf_counter() - started)
                        started = time.perf_counter()
                        repeats_found = window.repeats(name, partitions)
                        compared[label].append(time.perf_counter() - started)
                        assert not repeats_found
                        control.delete(name)
            window.close()
        finally:
            storage.close()
    return {
        part: {label: statistics.median(times) * 1000 for label, times in by_label.items()}
        for part, by_label in parts.items()
    }


def _added_requests(got: _Samples) -> str:
    """The blob requests a batch adds with the full window, by kind (the fewest seen)."""
    kinds = sorted({kind for counts in got.blob_requests["on, full window"] for kind in counts})
    added = []
    for kind in kinds:
        on = min(counts.get(kind, 0) for counts in got.blob_requests["on, full window"])
        off = min(counts.get(kind, 0) for counts in got.blob_requests["off"])
        if on > off:
            added.append(f"{kind} +{on - off}")
    return ", ".join(added)


async def _measure(
    shapes: dict[str, Shape],
    bodies: dict[str, bytes],
    rounds: int,
    quick: bool,
    window_ids: int,
) -> dict[str, _Samples]:
    pricebook = shared_pricebook(shapes, bodies)
    samples = {label: _Samples() for label in shapes}
    helpers = 1 if quick else 0  # as bench.intake_duplicates: no helper start in quick runs
    with tempfile.TemporaryDirectory(prefix="bench-transaction-ids-") as folder:
        async with AsyncExitStack() as stack:
            clients: dict[str, tuple[httpx.AsyncClient, BlobContainer]] = {}
            for number, variant in enumerate(VARIANTS):
                clients[variant] = await stack.enter_async_context(
                    _initiator(
                        Path(folder) / f"v{number}",
                        pricebook,
                        check=variant != "off",
                        window_ids=window_ids if variant == "on, full window" else 0,
                        intake_processes=helpers,
                    )
                )
            sent = 0
            for round_ in range(-1, rounds):  # round -1: untimed, warms every app
                for label, body in bodies.items():
                    order = VARIANTS[round_ % 3 :] + VARIANTS[: round_ % 3]
                    for variant in order:
                        sent += 1
                        distinct = body.replace(FIRST_ID, f"round-{sent:08d}".encode(), 1)
                        client, control = clients[variant]
                        seconds, blobs = await _post(client, distinct)
                        await anyio.to_thread.run_sync(_forget_own_index, control)
                        if round_ >= 0:
                            samples[label].seconds[variant].append(seconds)
                            samples[label].blob_requests[variant].append(blobs)
    return samples


@asynccontextmanager
async def _initiator(
    data_dir: Path, pricebook: bytes, *, check: bool, window_ids: int, intake_processes: int
) -> AsyncIterator[tuple[httpx.AsyncClient, BlobContainer]]:
    settings = bench_settings(
        data_dir,
        duplicate_body_window_seconds=86_400.0,
        duplicate_transaction_ids=check,
        intake_processes=intake_processes,
    )
    storage = open_storage(settings)
    try:
        container = storage.container(settings.control_container)
        container.create()
        PricebookStore(container).upload(pricebook)
        if window_ids:
            _fill_window(container, window_ids)
        async with asgi_client(settings) as client:
            yield client, container
    finally:
        storage.close()


def _fill_window(control: BlobContainer, ids: int) -> None:
    """Index blobs of :data:`WINDOW_BATCHES` earlier batches, ``ids`` ids in all; marked
    ``window-`` so that :func:`_forget_own_index` keeps them."""
    window = IdWindow(control, timedelta(days=1))
    per_batch = ids // WINDOW_BATCHES
    for batch in range(WINDOW_BATCHES):
        with FingerprintPartitions() as partitions:
            for start in range(0, per_batch, 100_000):
                stop = min(start + 100_000, per_batch)
                partitions.add([f"earlier-{batch}-{n}" for n in range(start, stop)])
            partitions.finish()
            window.publish(f"window-{batch}", utc_now(), partitions)
    window.close()


def _forget_own_index(control: BlobContainer) -> None:
    for blob in control.list(PREFIX):
        if not blob.name.rpartition("/")[2].startswith("window-"):
            control.delete(blob.name)


async def _post(client: httpx.AsyncClient, body: bytes) -> tuple[float, dict[str, int]]:
    """One accepted POST: its seconds and the blob requests made meanwhile, by kind."""
    seconds, requests = await timed_post(client, body)
    return seconds, {kind: n for kind, n in requests.items() if kind.startswith("blob.")}

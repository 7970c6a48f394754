"""The cost of the duplicate-body check at intake (``BILLING_DUPLICATE_BODY_WINDOW_SECONDS``).

Three initiators run side by side in this process, one per variant, each the real app (ASGI,
lifespan, the embedded backend in its own folder) with the shapes' pricebook made current:

* ``off``: the window is 0, so no body mapping is read or written;
* ``on``: the default window, every body new (the common case: one create-only insert);
* ``override``: the default window, the same body again with ``?allow_duplicate=true``
  (the insert conflicts, the mapping is read and replaced; the override skips looking up
  the earlier batch).

The sha256 of the body is computed on every path (it identifies the body for
``Idempotency-Key`` and the batch record too), so it is not part of the difference. Bodies
for ``on`` differ only in the first transaction id (same length), so every variant parses
and stores the same work. Rounds interleave the variants (in a rotating order) and the
shapes; each round's ``on``/``off`` ratio pairs two POSTs made moments apart, and the
median of those ratios is reported, because the machine is shared and noisy. Then the
check's parts are timed alone (:func:`direct_costs`), since its difference is far below the
rounds' noise.
"""

from __future__ import annotations

import hashlib
import statistics
import tempfile
import time
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path

import anyio
import httpx

from bench.in_process import asgi_client, bench_settings, timed_post
from bench.report import Report
from bench.shapes import MATRIX, Shape, batch_body, pricebook_document
from initiator.idempotency import IdempotencyKeys
from shared import meter
from shared.domain.pricebook_store import PricebookStore
from shared.settings import Settings
from shared.storage import open_storage

VARIANTS = ("off", "on", "override")
#: The first transaction id of every shape's file (seed 7), replaced to make bodies distinct.
FIRST_ID = b"tx-7-000000000"


@dataclass
class _Samples:
    seconds: dict[str, list[float]] = field(default_factory=lambda: {v: [] for v in VARIANTS})
    table_requests: dict[str, list[int]] = field(default_factory=lambda: {v: [] for v in VARIANTS})


def bench_shapes(quick: bool) -> dict[str, Shape]:
    """A small and a large batch of the demo-like ``base`` shape, by label."""
    base = MATRIX["base"]
    if quick:
        return {"small": base.resized(500), "large": base.resized(5_000)}
    return {"small": base.resized(1_000), "large": base.resized(200_000)}


def duplicate_check_cost(report: Report, *, quick: bool, rounds: int) -> None:
    shapes = bench_shapes(quick)
    bodies = {label: batch_body(shape) for label, shape in shapes.items()}
    samples = anyio.run(_measure, shapes, bodies, rounds, quick)
    rows: list[list[str | int | float]] = []
    for label, shape in shapes.items():
        got = samples[label]
        rate = {v: shape.transactions / statistics.median(got.seconds[v]) for v in VARIANTS}
        # Each round's pair was POSTed moments apart: the ratio of the pair, then the median.
        on_ratios = [
            off / on for off, on in zip(got.seconds["off"], got.seconds["on"], strict=True)
        ]
        override_ratios = [
            off / o for off, o in zip(got.seconds["off"], got.seconds["override"], strict=True)
        ]
        # The fewest over the rounds: a heartbeat write can land in one POST and not another.
        requests = {v: min(got.table_requests[v]) for v in VARIANTS}
        rows.append(
            [
                f"{label}: {shape.transactions:,} tx, {len(bodies[label]) / 1e6:.2f} MB",
                rate["off"],
                rate["on"],
                statistics.median(on_ratios),
                f"{min(on_ratios):.2f}-{max(on_ratios):.2f}",
                rate["override"],
                statistics.median(override_ratios),
                requests["on"] - requests["off"],
                requests["override"] - requests["off"],
            ]
        )
        prefix = f"duplicates.{label}"
        for variant in VARIANTS:
            report.figure(f"{prefix}.{variant}.transactions_per_s", rate[variant])
        report.figure(f"{prefix}.on_over_off", statistics.median(on_ratios))
        report.figure(f"{prefix}.override_over_off", statistics.median(override_ratios))
        report.figure(f"{prefix}.on_table_requests_added", requests["on"] - requests["off"])
        report.figure(
            f"{prefix}.override_table_requests_added", requests["override"] - requests["off"]
        )
    report.table(
        f"duplicate-body check: POST /batches with it off, on, and overridden (embedded, "
        f"'base' shape, {rounds} interleaved rounds, medians)",
        [
            "batch",
            "off tx/s",
            "on tx/s",
            "on/off",
            "on/off range",
            "override tx/s",
            "override/off",
            "on: table req +",
            "override: table req +",
        ],
        rows,
    )
    direct = direct_costs(bodies["large"], repeats=50 if quick else 400)
    intake_ms = {label: statistics.median(samples[label].seconds["off"]) * 1000 for label in shapes}
    sha256_ms = {label: direct.sha256_ms_per_mb * len(bodies[label]) / 1e6 for label in shapes}
    parts = {
        "mapping insert (a new body)": dict.fromkeys(shapes, direct.claim_ms),
        "override: insert, read, replace": dict.fromkeys(shapes, direct.override_ms),
        "sha256 of the body (paid with the check off too)": sha256_ms,
    }
    report.table(
        "duplicate-body check: its parts timed alone (embedded, medians), in ms and against "
        "the batch's intake time with the check off",
        ["part", *(f"{label} ms" for label in shapes), *(f"of {label}" for label in shapes)],
        [
            [
                part,
                *by_label.values(),
                *(f"{by_label[label] / intake_ms[label]:.2%}" for label in shapes),
            ]
            for part, by_label in parts.items()
        ],
    )
    report.figure("duplicates.claim_ms", direct.claim_ms)
    report.figure("duplicates.override_ms", direct.override_ms)
    report.figure("duplicates.sha256_ms_per_mb", direct.sha256_ms_per_mb)
    small, large = rows[0], rows[-1]
    report.conclude(
        f"with the duplicate-body check on, intake runs at {small[3]:.2f}x its speed without "
        f"it on a {shapes['small'].transactions:,}-transaction batch and {large[3]:.2f}x on "
        f"{shapes['large'].transactions:,} (ratios within the rounds' spread are noise): it "
        f"adds one table insert per batch, {direct.claim_ms:.2f} ms alone here; the body's "
        "sha256 is computed either way"
    )


def shared_pricebook(shapes: dict[str, Shape], bodies: dict[str, bytes]) -> bytes:
    """The one pricebook every shape uses (one app per variant serves them all); each body
    must hold :data:`FIRST_ID` once, the id a round rewrites to make the body distinct."""
    for label, body in bodies.items():
        assert body.count(FIRST_ID) == 1, f"{label}: the first transaction id is not {FIRST_ID!r}"
    pricebooks = {pricebook_document(shape) for shape in shapes.values()}
    assert len(pricebooks) == 1, "the shapes must share one pricebook (one app per variant)"
    (pricebook,) = pricebooks
    return pricebook


async def _measure(
    shapes: dict[str, Shape], bodies: dict[str, bytes], rounds: int, quick: bool
) -> dict[str, _Samples]:
    pricebook = shared_pricebook(shapes, bodies)
    samples = {label: _Samples() for label in shapes}
    # Quick: no intake helper processes, whose start (an interpreter each) would be most of
    # the run; the full run keeps the default, as deployed.
    helpers = 1 if quick else 0
    with tempfile.TemporaryDirectory(prefix="bench-duplicates-") as folder:
        async with AsyncExitStack() as stack:
            clients: dict[str, httpx.AsyncClient] = {}
            for variant in VARIANTS:
                clients[variant] = await stack.enter_async_context(
                    _initiator(
                        Path(folder) / variant,
                        pricebook,
                        window=0.0 if variant == "off" else 86_400.0,
                        intake_processes=helpers,
                    )
                )
                for body in bodies.values():
                    # Untimed: warms the app (pricebook cache, helpers, first blobs) and,
                    # for ``override``, stores the body every timed POST then repeats.
                    await _post(clients[variant], body, variant == "override")
            sent = 0
            for round_ in range(rounds):
                for label, body in bodies.items():
                    order = VARIANTS[round_ % 3 :] + VARIANTS[: round_ % 3]
                    for variant in order:
                        sent += 1
                        distinct = body.replace(FIRST_ID, f"round-{sent:08d}".encode(), 1)
                        payload = body if variant == "override" else distinct
                        seconds, tables = await _post(
                            clients[variant], payload, variant == "override"
                        )
                        samples[label].seconds[variant].append(seconds)
                        samples[label].table_requests[variant].append(tables)
    return samples


@asynccontextmanager
async def _initiator(
    data_dir: Path, pricebook: bytes, *, window: float, intake_processes: int
) -> AsyncIterator[httpx.AsyncClient]:
    settings = bench_settings(
        data_dir, duplicate_body_window_seconds=window, intake_processes=intake_processes
    )
    storage = open_storage(settings)
    try:
        container = storage.container(settings.control_container)
        container.create()
        PricebookStore(container).upload(pricebook)
    finally:
        storage.close()
    async with asgi_client(settings) as client:
        yield client


async def _post(client: httpx.AsyncClient, body: bytes, allow_duplicate: bool) -> tuple[float, int]:
    """One accepted POST: its seconds and the table requests made meanwhile."""
    params = {"allow_duplicate": "true"} if allow_duplicate else {}
    seconds, requests = await timed_post(client, body, params)
    return seconds, meter.total(requests, prefix="table")


@dataclass(frozen=True)
class DirectCosts:
    """The check's parts timed alone (medians), on the embedded backend."""

    claim_ms: float  # a new body: the create-only insert of its mapping
    override_ms: float  # the same body with the override: insert (conflict), read, replace
    sha256_ms_per_mb: float  # paid with the check off too (the record and the key need it)


def direct_costs(body: bytes, repeats: int) -> DirectCosts:
    """Time :meth:`IdempotencyKeys.claim_body` and the body's sha256 by themselves, to say
    what the interleaved rounds' difference is made of (it is within their noise)."""
    with tempfile.TemporaryDirectory(prefix="bench-duplicates-direct-") as folder:
        settings = Settings(_env_file=None, data_dir=Path(folder))  # type: ignore[call-arg]
        storage = open_storage(settings)
        try:
            table = storage.table(settings.batches_table)
            table.create()
            keys = IdempotencyKeys(table)
            claims, overrides = [], []
            for n in range(repeats):
                digest = hashlib.sha256(str(n).encode()).hexdigest()
                started = time.perf_counter()
                keys.claim_body(digest, f"b{n}", is_live=_live, allow_duplicate=False)
                claims.append(time.perf_counter() - started)
                started = time.perf_counter()
                keys.claim_body(digest, f"c{n}", is_live=_live, allow_duplicate=True)
                overrides.append(time.perf_counter() - started)
        finally:
            storage.close()
    hashes = []
    for _ in range(max(3, repeats // 20)):
        started = time.perf_counter()
        hashlib.sha256(body).hexdigest()
        hashes.append(time.perf_counter() - started)
    return DirectCosts(
        claim_ms=statistics.median(claims) * 1000,
        override_ms=statistics.median(overrides) * 1000,
        sha256_ms_per_mb=statistics.median(hashes) * 1000 / (len(body) / 1e6),
    )


def _live(_batch_id: str) -> bool:
    return True

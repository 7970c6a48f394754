"""Order ids stay unique when many processes, each with many threads, share one counter blob.

Each process is a fresh interpreter (``spawn``, like separate controller instances) with one
:class:`~shared.coordination.ids.OrderIdAllocator` shared by its threads; all of them start drawing
at the
same moment (a barrier) and write what they drew to a file. The parent then checks that no id
was handed out twice, and prints how many optimistic writes lost a race (412s / 409s).

The range size is kept small on purpose (a few hundred reservations instead of the default
settings' handful) so that the conditional writes really do collide.
"""

from __future__ import annotations

import multiprocessing
import threading
import traceback
from array import array
from dataclasses import dataclass
from multiprocessing.synchronize import Barrier as BarrierType
from pathlib import Path
from typing import Any, TypeAlias

import pytest

from shared.coordination.ids import OrderIdAllocator
from shared.storage.ports import BlobContainer, StorageAccount
from tests.support.azurite import AzuriteInfo
from tests.support.names import unique_name

RESULT_TIMEOUT_SECONDS = 280
MAX_RETRIES = 100

Results: TypeAlias = "multiprocessing.Queue[tuple[str, Any]]"


@dataclass(frozen=True)
class Load:
    processes: int
    threads: int
    ids: int
    range_size: int

    @property
    def per_thread(self) -> int:
        return self.ids // (self.processes * self.threads)


@dataclass(frozen=True)
class Backend:
    """What a child process needs to open the same storage: picklable, unlike an account."""

    kind: str  # "embedded" or "azurite"
    location: str  # the embedded root folder or the Azurite connection string
    container: str

    def open(self) -> StorageAccount:
        if self.kind == "embedded":
            from shared.storage.embedded import EmbeddedStorageAccount

            return EmbeddedStorageAccount(Path(self.location))
        from shared.storage.azure import AzureStorageAccount
        from shared.storage.azure.options import RetryOptions

        return AzureStorageAccount.from_connection_string(
            self.location, retry=RetryOptions(total=3, backoff_seconds=0.05)
        )


LOADS = {
    "embedded": Load(processes=8, threads=8, ids=1_000_000, range_size=1000),
    "azurite": Load(processes=4, threads=4, ids=50_000, range_size=250),
}


@pytest.fixture(params=["embedded", pytest.param("azurite", marks=pytest.mark.azurite)])
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Backend:
    container = unique_name("ids")
    if request.param == "azurite":
        azurite: AzuriteInfo = request.getfixturevalue("azurite")
        chosen = Backend("azurite", azurite.connection_string, container)
    else:
        chosen = Backend("embedded", str(tmp_path / "storage"), container)
    account = chosen.open()
    try:
        account.container(container).create()
    finally:
        account.close()
    return chosen


def draw_ids(backend: Backend, load: Load, out: str, start: BarrierType, results: Results) -> None:
    """One process: its threads draw their share through one allocator; ids go to ``out``."""
    try:
        account = backend.open()
        allocator = OrderIdAllocator(
            account.container(backend.container),
            range_size=load.range_size,
            max_retries=MAX_RETRIES,
        )
        shares: list[list[int]] = []

        def draw() -> None:
            mine: list[int] = []
            while len(mine) < load.per_thread:
                # Mostly one at a time (an API call), now and then a chunk's worth.
                wanted = 1 if len(mine) % 7 else min(97, load.per_thread - len(mine))
                mine.extend(allocator.take(wanted) if wanted > 1 else [allocator.next_id()])
            shares.append(mine)

        threads = [threading.Thread(target=draw) for _ in range(load.threads)]
        start.wait(timeout=120)
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        drawn = array("q", (i for share in shares for i in share))
        Path(out).write_bytes(drawn.tobytes())
        account.close()
        results.put(("ok", (len(drawn), allocator.conflicts, allocator.reservations)))
    except BaseException:
        results.put(("error", traceback.format_exc()))


def counter_value(container: BlobContainer) -> int:
    return int(container.get("counters/order-id").data)


def test_processes_and_threads_never_draw_the_same_id(backend: Backend, tmp_path: Path) -> None:
    load = LOADS[backend.kind]
    spawn = multiprocessing.get_context("spawn")
    start = spawn.Barrier(load.processes)
    results: Results = spawn.Queue()
    outputs = [tmp_path / f"ids-{n}.bin" for n in range(load.processes)]
    workers = [
        spawn.Process(target=draw_ids, args=(backend, load, str(out), start, results))
        for out in outputs
    ]
    for worker in workers:
        worker.start()
    outcomes = [results.get(timeout=RESULT_TIMEOUT_SECONDS) for _ in workers]
    for worker in workers:
        worker.join(timeout=30)

    assert [detail for status, detail in outcomes if status == "error"] == []
    drawn = array("q")
    for out in outputs:
        drawn.frombytes(out.read_bytes())
    conflicts = sum(conflicts for _, (_, conflicts, _) in outcomes)
    reservations = sum(reservations for _, (_, _, reservations) in outcomes)
    print(
        f"\n{backend.kind}: {load.processes} processes x {load.threads} threads drew "
        f"{len(drawn):,} ids with {reservations} reservations and {conflicts} conflicts "
        f"(lost optimistic writes)"
    )

    assert len(drawn) == load.ids
    assert len(set(drawn)) == load.ids, "an id was handed out twice"
    account = backend.open()
    try:
        reserved = counter_value(account.container(backend.container))
    finally:
        account.close()
    assert min(drawn) >= 1
    assert max(drawn) <= reserved
    # Every process leaves less than one range unused: nothing was reserved twice or lost.
    assert reserved - load.ids < load.processes * load.range_size

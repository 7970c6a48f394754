"""The embedded queue is safe when several *processes* share one folder.

Four processes each send 2,000 messages to one queue and, at the same time, all four take
messages from it, 32 at a time. Every 50th message is given back once (its visibility set
to zero) so it is delivered a second time, maybe to another process. Then:

* every message is deleted exactly once (processed once, none lost, none left over);
* no message is ever held by two processes at once: each delivery starts after the
  previous holder gave the message up, and dequeue counts run 1, 2, ... without a repeat.

Processes start with ``spawn`` (a fresh interpreter each, like separate processor
instances), and a 60 s visibility timeout outlasts the test, so a second delivery can
only come from a deliberate give-back, never from a timeout.
"""

from __future__ import annotations

import itertools
import multiprocessing
import os
import time
import traceback
from collections import Counter, defaultdict
from multiprocessing.sharedctypes import Synchronized
from multiprocessing.synchronize import Barrier as BarrierType
from pathlib import Path
from typing import Any, NamedTuple, TypeAlias

from shared.storage.embedded import EmbeddedStorageAccount
from shared.storage.ports import Queue

PROCESSES = 4
MESSAGES_PER_PROCESS = 2000
GIVE_BACK_EVERY = 50
HIDE_SECONDS = 60
QUEUE = "cross-process"
RESULT_TIMEOUT_SECONDS = 240

#: Where a worker reports ``("ok", what it did)`` or ``("error", its traceback)``.
Results: TypeAlias = "multiprocessing.Queue[tuple[str, Any]]"


class Delivery(NamedTuple):
    content: str
    dequeue_count: int
    pid: int
    received_at: float  # wall clock, right after the receive returned
    given_up_at: float  # wall clock, right before the delete or the give-back
    deleted: bool


def must_give_back(content: str, dequeue_count: int) -> bool:
    return dequeue_count == 1 and int(content.split(":")[1]) % GIVE_BACK_EVERY == 0


def produce_and_consume(
    root: str, worker: int, producers_done: Synchronized[int], results: Results
) -> None:
    """One process: send this worker's share, and take messages until the queue is empty."""
    try:
        account = EmbeddedStorageAccount(Path(root))
        queue = account.queue(QUEUE)
        deliveries: list[Delivery] = []
        for n in range(MESSAGES_PER_PROCESS):
            queue.send(f"{worker}:{n}")
            if n % 100 == 0:  # interleave: consume while the others still produce
                deliveries += take_batch(queue)
        with producers_done.get_lock():
            producers_done.value += 1
        while True:
            batch = take_batch(queue)
            deliveries += batch
            if not batch:
                if producers_done.value == PROCESSES and queue.approximate_count() == 0:
                    break
                time.sleep(0.005)  # others still hold or are about to send messages
        account.close()
        results.put(("ok", deliveries))
    except BaseException:
        results.put(("error", traceback.format_exc()))


def take_batch(queue: Queue) -> list[Delivery]:
    """Receive up to 32; give each back (the chosen ones) or delete it, recording when."""
    taken = []
    messages = queue.receive(32, visibility_timeout=HIDE_SECONDS)
    received_at = time.time()
    for message in messages:
        given_up_at = time.time()
        give_back = must_give_back(message.content, message.dequeue_count)
        if give_back:
            queue.update_visibility(message, 0)
        else:
            queue.delete(message)
        taken.append(
            Delivery(
                message.content,
                message.dequeue_count,
                os.getpid(),
                received_at,
                given_up_at,
                deleted=not give_back,
            )
        )
    return taken


def test_four_processes_share_one_queue_without_losing_or_doubling_a_message(
    tmp_path: Path,
) -> None:
    root = tmp_path / "storage"
    setup = EmbeddedStorageAccount(root)
    setup.queue(QUEUE).create()

    context = multiprocessing.get_context("spawn")
    producers_done = context.Value("i", 0)
    results = context.Queue()
    workers = [
        context.Process(target=produce_and_consume, args=(str(root), w, producers_done, results))
        for w in range(PROCESSES)
    ]
    started = time.perf_counter()
    for worker in workers:
        worker.start()
    outcomes = [results.get(timeout=RESULT_TIMEOUT_SECONDS) for _ in workers]
    elapsed = time.perf_counter() - started
    for worker in workers:
        worker.join(timeout=30)

    errors = [detail for status, detail in outcomes if status == "error"]
    assert errors == []
    deliveries = [d for _, share in outcomes for d in share]
    sent = {f"{w}:{n}" for w in range(PROCESSES) for n in range(MESSAGES_PER_PROCESS)}
    print(
        f"\n{len(sent)} messages, {len(deliveries)} deliveries by {PROCESSES} processes "
        f"in {elapsed:.1f} s (process start-up included)"
    )

    # Processed exactly once, none lost, none left over.
    deleted = Counter(d.content for d in deliveries if d.deleted)
    assert set(deleted) == sent
    assert set(deleted.values()) == {1}
    assert setup.queue(QUEUE).approximate_count() == 0

    # Never held by two processes at once.
    by_message: defaultdict[str, list[Delivery]] = defaultdict(list)
    for delivery in deliveries:
        by_message[delivery.content].append(delivery)
    for content, history in by_message.items():
        history.sort(key=lambda d: d.dequeue_count)
        expected_count = 2 if must_give_back(content, 1) else 1
        assert [d.dequeue_count for d in history] == list(range(1, expected_count + 1)), content
        for previous, following in itertools.pairwise(history):
            assert following.received_at >= previous.given_up_at, content
    # The give-backs really went around: some came back to a different process.
    given_back = [h for h in by_message.values() if len(h) == 2]
    assert len(given_back) == len(sent) // GIVE_BACK_EVERY
    assert any(first.pid != second.pid for first, second in given_back)
    setup.close()


def open_and_use_fresh_folder(root: str, worker: int, start: BarrierType, results: Results) -> None:
    try:
        start.wait()  # all at once, to make them race for the new files
        account = EmbeddedStorageAccount(Path(root))
        queue = account.queue(QUEUE)
        queue.create()
        queue.send(str(worker))
        container = account.container("shared")
        container.create()
        container.put(f"from-{worker}", b"x")
        account.close()
        results.put(("ok", worker))
    except BaseException:
        results.put(("error", traceback.format_exc()))


def test_processes_may_create_a_fresh_folder_at_the_same_time(tmp_path: Path) -> None:
    """Schema creation and the switch to WAL race safely when nobody set the folder up."""
    root = tmp_path / "fresh"
    context = multiprocessing.get_context("spawn")
    results = context.Queue()
    start = context.Barrier(PROCESSES)
    workers = [
        context.Process(target=open_and_use_fresh_folder, args=(str(root), w, start, results))
        for w in range(PROCESSES)
    ]
    for worker in workers:
        worker.start()
    outcomes = [results.get(timeout=RESULT_TIMEOUT_SECONDS) for _ in workers]
    for worker in workers:
        worker.join(timeout=30)

    assert sorted(outcomes) == [("ok", w) for w in range(PROCESSES)]
    account = EmbeddedStorageAccount(root)
    assert account.queue(QUEUE).approximate_count() == PROCESSES
    assert len(list(account.container("shared").list())) == PROCESSES
    account.close()

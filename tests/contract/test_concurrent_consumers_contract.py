"""Several consumers on one queue never hold the same visible message at once.

Threads here, on both backends; the embedded backend's cross-process safety has its own
test with processes.
"""

from __future__ import annotations

from collections import Counter
from concurrent.futures import ThreadPoolExecutor

from shared.storage.ports import Queue

CONSUMERS = 4
MESSAGES = 60


def drain(queue: Queue) -> list[str]:
    """Receive, record and delete until the queue has nothing visible left."""
    taken: list[str] = []
    while batch := queue.receive(5, visibility_timeout=60):
        for message in batch:
            taken.append(message.content)
            queue.delete(message)
    return taken


def test_concurrent_consumers_each_take_a_distinct_share(queue: Queue) -> None:
    sent = [f"m{n}" for n in range(MESSAGES)]
    for content in sent:
        queue.send(content)

    with ThreadPoolExecutor(CONSUMERS) as pool:
        shares = list(pool.map(lambda _: drain(queue), range(CONSUMERS)))

    # The timeout (60 s) outlasts the test: a message seen twice was handed out twice while
    # hidden, which is exactly what must never happen.
    seen = Counter(content for share in shares for content in share)
    assert seen == Counter(sent)
    assert queue.approximate_count() == 0

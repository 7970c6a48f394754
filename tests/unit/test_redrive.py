"""Redriving a poison queue: selected records go back to their source as new messages;
the rest stay, visible at once to the next operator."""

from __future__ import annotations

from datetime import UTC, datetime

from shared.listener.poison import PoisonRecord
from shared.listener.redrive import peek_poisoned, redrive
from shared.storage.embedded import EmbeddedStorageAccount


def _record(content: str, *, truncated: bool = False) -> str:
    return PoisonRecord(
        source_queue="work",
        message_id=f"m-{content}",
        dequeue_count=6,
        content=content,
        content_truncated=truncated,
        last_error="ValueError: bad",
        poisoned_at=datetime.now(UTC),
    ).model_dump_json()


def test_selected_records_go_back_and_the_others_stay_visible(
    account: EmbeddedStorageAccount,
) -> None:
    work, poison = account.queue("work"), account.queue("work-poison")
    work.create()
    poison.create()
    for text in (_record("a"), _record("b"), _record("c", truncated=True), "not a record"):
        poison.send(text)

    report = redrive(poison, account.queue, select=lambda record: record.content != "b")

    assert [record.content for record in report.redriven] == ["a"]
    assert sorted(p.record.content if p.record else "?" for p in report.skipped) == ["?", "b", "c"]
    (back,) = work.receive()
    assert (back.content, back.dequeue_count) == ("a", 1)  # a new message, counted afresh
    left = peek_poisoned(poison)
    assert len(left) == 3  # visible again at once
    assert {p.record.content for p in left if p.record} == {"b", "c"}

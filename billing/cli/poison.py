"""``billing poison list`` and ``billing poison redrive``: the operator's poison-queue tools.

Both talk to storage directly (like ``billing release``): poison queues are pipeline state
that the HTTP API does not serve. Every work queue and the results queue has one,
``<queue>-poison``; they are made on first use, so a missing one is simply empty.
"""

from __future__ import annotations

import json

import typer
from azure.core.exceptions import ResourceNotFoundError

from billing.cli.store import operations_store
from shared.coordination.work_signal import signal_work
from shared.listener.poison import PoisonRecord
from shared.listener.redrive import peek_poisoned, redrive
from shared.listener.source import poison_queue
from shared.settings import Settings
from shared.storage.ports import BlobContainer

poison_app = typer.Typer(help="See and redrive poisoned messages.", no_args_is_help=True)

BATCH_OPTION = typer.Option(None, "--batch", help="Only the messages of this batch.")


def source_queues(settings: Settings) -> list[str]:
    """Every queue whose messages can be poisoned: the work queues, then the results queue."""
    return [*settings.all_work_queues(), settings.output_queue]


def _signal_processors(control: BlobContainer) -> None:
    """Idle processors read the work signal, not every queue's depth: move it on."""
    try:
        signal_work(control, "redrive")
    except Exception as exc:  # the messages are back: they will be found, only later
        typer.echo(
            f"could not move the work signal ({exc}); idle processors will find the "
            "redriven messages on their next full look at the queues (within an hour)",
            err=True,
        )


def chunk_of(record: PoisonRecord) -> tuple[str, int] | None:
    """(batch id, chunk) named by a poisoned work item or result message, if it names one."""
    try:
        document = json.loads(record.content)
        return str(document["batch_id"]), int(document["chunk"])
    except (ValueError, KeyError, TypeError):
        return None


def _selects(record: PoisonRecord, batch_id: str | None) -> bool:
    if batch_id is None:
        return True
    named = chunk_of(record)
    return named is not None and named[0] == batch_id


@poison_app.command("list")
def list_poisoned(batch_id: str | None = BATCH_OPTION) -> None:
    """Show what each poison queue holds (up to 32 per queue) and why it was set aside."""
    total = 0
    with operations_store(writes=False) as (settings, storage):
        for name in source_queues(settings):
            try:
                found = peek_poisoned(storage.queue(poison_queue(name)))
            except ResourceNotFoundError:
                continue  # never used: nothing was poisoned there
            for poisoned in found:
                if poisoned.record is None:
                    typer.echo(f"{poisoned.queue}: message {poisoned.message_id} is no record")
                elif _selects(poisoned.record, batch_id):
                    typer.echo(_describe(poisoned.queue, poisoned.record))
                    total += 1
    if total == 0:
        typer.echo("no poisoned messages")
        return
    again = f" --batch {batch_id}" if batch_id else ""
    typer.echo(
        f"{total} poisoned message(s); once the cause is fixed: billing poison redrive{again}"
    )


def _describe(queue: str, record: PoisonRecord) -> str:
    batch, chunk = chunk_of(record) or ("(unknown)", "?")
    return (
        f"{queue}: batch {batch} chunk {chunk}, dequeued {record.dequeue_count} times, "
        f"poisoned {record.poisoned_at:%Y-%m-%d %H:%M:%S} UTC\n"
        f"  last error: {record.last_error}"
    )


@poison_app.command("redrive")
def redrive_poisoned(batch_id: str | None = BATCH_OPTION) -> None:
    """Send poisoned messages back to their queues to be processed again (fix the cause first)."""
    redriven = skipped = 0
    with operations_store(writes=False) as (settings, storage):
        for name in source_queues(settings):
            try:
                report = redrive(
                    storage.queue(poison_queue(name)),
                    storage.queue,
                    select=lambda record: _selects(record, batch_id),
                )
            except ResourceNotFoundError:
                continue
            redriven += len(report.redriven)
            skipped += sum(
                1 for p in report.skipped if p.record is None or p.record.content_truncated
            )
        if redriven:
            _signal_processors(storage.container(settings.control_container))
    typer.echo(f"redrove {redriven} message(s)")
    if skipped:
        typer.echo(
            f"{skipped} message(s) could not be redriven (unreadable or truncated content); "
            "see billing poison list",
            err=True,
        )
        raise typer.Exit(1)


def register(app: typer.Typer) -> None:
    app.add_typer(poison_app, name="poison")

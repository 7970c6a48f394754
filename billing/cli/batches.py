"""Batch and pricebook commands: ``billing generate``, ``submit``, ``pricebook upload|show``."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import typer
from rich.console import Console

from billing.cli.api import API_KEY_OPTION, URL_OPTION, api_client
from billing.cli.console import make_console
from billing.cli.progress import counted, follow_batch, upload_progress
from billing.cli.store import control_for_writing, operations_store
from billing.cli.uploader import forget, upload_file
from billing.sample_batches import BatchFileFormat, write_batch_file
from shared.domain.pricebook import PricebookError
from shared.domain.pricebook_store import NoPricebookError, PricebookStore
from shared.domain.priority import PRIORITIES
from shared.settings import Settings

UPLOAD_BLOCK_BYTES = 1024 * 1024
_CONTENT_TYPES = {
    ".csv": "text/csv",
    ".jsonl": "application/x-ndjson",
    ".ndjson": "application/x-ndjson",
}

pricebook_app = typer.Typer(help="Upload or show the pricebook new batches are rated with.")


def generate(
    transactions: int = typer.Option(..., "--transactions", "-n", min=1, help="Lines to write."),
    out: Path = typer.Option(..., "--out", "-o", help="File to write.", dir_okay=False),
    customers: int = typer.Option(1000, min=1, help="Distinct customers."),
    seed: int = typer.Option(0, help="Same seed, same file."),
    file_format: str = typer.Option("csv", "--format", help="csv or jsonl."),
    gzip: bool = typer.Option(False, "--gzip", help="Compress the file with gzip."),
) -> None:
    """Write a realistic batch file consistent with the sample pricebook."""
    if file_format not in ("csv", "jsonl"):
        raise typer.BadParameter("use csv or jsonl", param_hint="--format")
    chosen: BatchFileFormat = "csv" if file_format == "csv" else "jsonl"
    size = write_batch_file(
        out, transactions, customers=customers, seed=seed, file_format=chosen, gzip=gzip
    )
    typer.echo(f"wrote {transactions:,} transactions ({size:,} bytes) to {out}")


def submit(
    file: Path = typer.Argument(..., exists=True, dir_okay=False, help="The batch file."),
    priority: str = typer.Option("normal", help="high, normal or low."),
    url: str | None = URL_OPTION,
    api_key: str | None = API_KEY_OPTION,
    idempotency_key: str | None = typer.Option(None, help="Send this Idempotency-Key."),
    wait: bool = typer.Option(
        False,
        "--wait",
        help="Show the upload and the processing with progress bars, then the reconciliation; "
        "exit 1 unless the batch completes reconciled.",
    ),
    via_upload: bool | None = typer.Option(
        None,
        "--via-upload/--via-body",
        help="Upload the file to storage first, in parallel blocks that a rerun resumes, or "
        "send it as the request body. Default: upload from BILLING_SUBMIT_VIA_UPLOAD_BYTES.",
    ),
) -> None:
    """Send a batch file to the initiator and print the batch id."""
    if priority not in PRIORITIES:
        raise typer.BadParameter(f"use one of {', '.join(PRIORITIES)}", param_hint="--priority")
    headers = _content_headers(file)  # the upload's own; the key goes on every request
    size = file.stat().st_size
    if via_upload is None:
        via_upload = size >= Settings().submit_via_upload_bytes
    if idempotency_key:
        headers["Idempotency-Key"] = idempotency_key
    console = make_console(stderr=True)
    with api_client(url, api_key, timeout=httpx.Timeout(30.0, read=None)) as client:
        if via_upload:
            response = _submit_upload(client, file, priority, headers, console if wait else None)
        else:
            headers["Content-Length"] = str(size)
            if wait:
                with upload_progress(console) as bar:
                    response = _post(client, priority, counted(_blocks(file), bar, size), headers)
            else:
                response = _post(client, priority, _blocks(file), headers)
        body = _json(response)
        if response.status_code not in (200, 202):
            _print_rejection(response.status_code, body)
            raise typer.Exit(1)
        typer.echo(body["batch_id"])
        # Through the console, so that a terminal wraps it between words, not inside the URL.
        console.print(
            f"{body['transactions']:,} transactions in {body['chunks']} chunks, "
            f"{body['priority']} priority; status: {body['status_url']}",
            markup=False,
            highlight=False,
        )
        if not wait:
            return
        final = follow_batch(client, body["batch_id"], console)
    if final["status"] != "completed" or final.get("reconciled") is not True:
        raise typer.Exit(1)


def _post(
    client: httpx.Client, priority: str, content: Iterator[bytes], headers: dict[str, str]
) -> httpx.Response:
    return client.post("/batches", params={"priority": priority}, content=content, headers=headers)


def _submit_upload(
    client: httpx.Client,
    file: Path,
    priority: str,
    headers: dict[str, str],
    console: Console | None,
) -> httpx.Response:
    """Upload the file to storage (resuming an earlier run), then ``POST /batches`` naming it."""
    if console is None:
        uploaded = upload_file(client, file)
    else:
        with upload_progress(console) as bar:
            task = bar.add_task("upload", total=file.stat().st_size)
            uploaded = upload_file(client, file, on_block=lambda size: bar.advance(task, size))
    if uploaded.blocks_sent < uploaded.blocks:
        kept = uploaded.blocks - uploaded.blocks_sent
        sys.stderr.write(f"resumed: {kept} of {uploaded.blocks} blocks were uploaded before\n")
    reference = {
        "upload": uploaded.blob,
        "content_type": headers["Content-Type"],
        "content_encoding": headers.get("Content-Encoding"),
    }
    extra = {"Idempotency-Key": headers["Idempotency-Key"]} if "Idempotency-Key" in headers else {}
    response = client.post("/batches", params={"priority": priority}, json=reference, headers=extra)
    if response.status_code < 500:  # taken, or refused for good: the upload is spent
        forget(file)
    return response


@pricebook_app.command("upload")
def pricebook_upload(
    file: Path = typer.Argument(..., exists=True, dir_okay=False, help="The pricebook JSON."),
) -> None:
    """Validate a pricebook and make it current for new batches."""
    with operations_store(writes=True) as (settings, storage):
        container = control_for_writing(settings, storage)
        try:
            version = PricebookStore(container).upload(file.read_bytes())
        except PricebookError as error:
            typer.echo(f"{file} is not a valid pricebook:", err=True)
            for problem in error.problems:
                typer.echo(f"  {problem}", err=True)
            raise typer.Exit(1) from None
    typer.echo(f"pricebook {version} is now current")


@pricebook_app.command("show")
def pricebook_show() -> None:
    """Print the current pricebook (canonical JSON) and its version."""
    with operations_store(writes=False) as (settings, storage):
        try:
            version, book = PricebookStore(storage.container(settings.control_container)).current()
        except NoPricebookError as error:
            typer.echo(str(error), err=True)
            raise typer.Exit(1) from None
    typer.echo(f"version {version}", err=True)
    typer.echo(json.dumps(book.canonical(), indent=2))


def _content_headers(file: Path) -> dict[str, str]:
    """Content-Type from the extension; ``.gz`` adds ``Content-Encoding: gzip``."""
    suffixes = [suffix.lower() for suffix in file.suffixes]
    gzipped = bool(suffixes) and suffixes[-1] == ".gz"
    inner = suffixes[-2] if gzipped and len(suffixes) > 1 else (suffixes[-1] if suffixes else "")
    headers = {"Content-Type": _CONTENT_TYPES.get(inner, "application/octet-stream")}
    if gzipped:
        headers["Content-Encoding"] = "gzip"
    return headers


def _blocks(file: Path) -> Iterator[bytes]:
    with file.open("rb") as source:
        while block := source.read(UPLOAD_BLOCK_BYTES):
            yield block


def _json(response: httpx.Response) -> dict[str, Any]:
    try:
        body = response.json()
    except ValueError:
        return {"title": response.text or response.reason_phrase}
    return body if isinstance(body, dict) else {"title": str(body)}


def _print_rejection(status: int, body: dict[str, Any]) -> None:
    echo = sys.stderr.write
    echo(f"rejected ({status}): {body.get('title') or body.get('detail')}\n")
    if body.get("detail") and body.get("title"):
        echo(f"  {body['detail']}\n")
    for problem in body.get("problems", []):
        where = f"line {problem['line']}" if problem.get("line") else "body"
        field = f" [{problem['field']}]" if problem.get("field") else ""
        echo(f"  {where}{field}: {problem['reason']}\n")
    if body.get("problems_truncated"):
        echo("  … more problems not shown\n")


def register(app: typer.Typer) -> None:
    app.command()(generate)
    app.command()(submit)
    app.add_typer(pricebook_app, name="pricebook")

"""The store the operations commands act on (``pricebook``, ``poison``, ``hold``, ``release``).

They talk to storage directly, so they must reach the store the roles use: the embedded
folder ``BILLING_DATA_DIR`` (default ``./.billing``) or the storage account of
``BILLING_STORAGE_CONNECTION_STRING`` / ``BILLING_STORAGE_ACCOUNT_URL``. Each says which one
on stderr before it acts, and reading never creates an embedded store: a missing folder is
an error that names it, since an empty new store would answer "nothing here" about a
pipeline that runs elsewhere.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import typer

from billing.cli.failures import UNREACHABLE, CommandError
from shared.settings import Settings
from shared.storage import open_storage
from shared.storage.ports import BlobContainer, StorageAccount


def embedded_root(settings: Settings) -> Path:
    """Where the embedded backend keeps its storage (see :func:`shared.storage.open_storage`)."""
    return (settings.data_dir / "storage").resolve()


def describe_store(settings: Settings | None = None) -> str:
    """``embedded store in /abs/.billing`` or ``storage account NAME (ENDPOINT)``."""
    settings = settings or Settings()
    if settings.storage_connection_string is not None:
        parts = _connection_parts(settings.storage_connection_string.get_secret_value())
        name = parts.get("accountname", "(unnamed)")
        endpoint = parts.get("queueendpoint") or parts.get("blobendpoint")
        return f"storage account {name}" + (f" ({endpoint})" if endpoint else "")
    if settings.storage_account_url:
        return f"storage account at {settings.storage_account_url}"
    return f"embedded store in {settings.data_dir.resolve()}"


@contextmanager
def operations_store(*, writes: bool) -> Iterator[tuple[Settings, StorageAccount]]:
    """The settings and the store, said on stderr; closed when the block ends.

    ``writes=False`` (a reading command) refuses a missing embedded store instead of making
    an empty one; a writing command makes it and says that it is new."""
    settings = Settings()
    fresh = False
    if not settings.uses_azure_storage and not embedded_root(settings).is_dir():
        if not writes:
            raise CommandError(_missing(settings), UNREACHABLE)
        fresh = True
    typer.echo(
        f"store: {describe_store(settings)}" + (" (new: no role has used it yet)" if fresh else ""),
        err=True,
    )
    try:
        storage = open_storage(settings)
    except ValueError as error:  # the SDK's word for a malformed connection string
        raise CommandError(
            f"cannot open the {describe_store(settings)}: {error}; check "
            "BILLING_STORAGE_CONNECTION_STRING",
            UNREACHABLE,
        ) from None
    try:
        yield settings, storage
    finally:
        storage.close()


def control_for_writing(settings: Settings, storage: StorageAccount) -> BlobContainer:
    """The control container, for a command that writes to it and may be the first to use
    it: made here where the deployment provisions its own resources, else the deployment
    declared it (Bicep), and the command's grant covers its blobs, not making containers."""
    control = storage.container(settings.control_container)
    if settings.provision_resources:
        control.create()
    return control


def _missing(settings: Settings) -> str:
    return (
        f"no embedded store in {settings.data_dir.resolve()}: set BILLING_DATA_DIR to the data "
        "folder the roles use (billing demo --stay prints it), or "
        "BILLING_STORAGE_CONNECTION_STRING / BILLING_STORAGE_ACCOUNT_URL for a storage account"
    )


def _connection_parts(connection_string: str) -> dict[str, str]:
    parts: dict[str, str] = {}
    for part in connection_string.split(";"):
        key, sep, value = part.partition("=")
        if sep:
            parts[key.strip().lower()] = value.strip()
    return parts

"""A throw-away deployment for a benchmark (:class:`billing.deployment.Deployment`), and real
batches on its queues.

    with open_deployment("azurite", quick=False) as deployment:
        batch = deployment.accept_batch(transactions=20_000, chunk_size=2_000)

The embedded backend lives in a temporary folder; ``azurite`` starts its own Azurite (in
memory, free ports) with the launcher of ``billing.devtools``. The trigger bus is always the
embedded one (there is no Service Bus emulator to start here).

Batches go through the production acceptance (:class:`~initiator.acceptance.BatchAcceptance`:
the streaming parser, payload blobs, the batch record, work items on the partitioned queues,
the trigger), so a benchmark drains exactly what the initiator leaves behind.
"""

from __future__ import annotations

import hashlib
import tempfile
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any, Literal

from billing import deployment as composition
from billing.sample_batches import generate_lines
from initiator.acceptance import BatchAcceptance, BatchRequest
from initiator.publishing import FaultHook, Publisher
from shared.contracts.batch_records import BatchRecord
from shared.domain.pricebook import sample_pricebook
from shared.domain.pricebook_store import PricebookStore
from shared.domain.priority import Priority
from shared.settings import Settings

Backend = Literal["embedded", "azurite"]
BACKENDS: tuple[Backend, ...] = ("embedded", "azurite")


class BytesBody:
    """A request body from bytes already in memory (the acceptance's ``RequestBody``)."""

    def __init__(self, data: bytes, block_size: int = 1024 * 1024) -> None:
        self._data = data
        self._block_size = block_size
        self.bytes_read = 0

    @property
    def sha256(self) -> str:
        return hashlib.sha256(self._data[: self.bytes_read]).hexdigest()

    def __iter__(self) -> Iterator[bytes]:
        for start in range(0, len(self._data), self._block_size):
            block = self._data[start : start + self._block_size]
            self.bytes_read += len(block)
            yield block

    def drain(self) -> None:
        self.bytes_read = len(self._data)


def batch_file(transactions: int, *, seed: int = 7, customers: int = 500) -> bytes:
    """A realistic CSV batch consistent with the sample pricebook (``billing generate``)."""
    lines = generate_lines(transactions, customers=customers, seed=seed, file_format="csv")
    return "".join(lines).encode()


class Deployment(composition.Deployment):
    """The composition's deployment on ``backend``, and a way to put real batches on it."""

    def __init__(self, backend: Backend, settings: Settings) -> None:
        super().__init__(settings)
        self.backend = backend

    def accept_batch(
        self,
        transactions: int,
        *,
        priority: Priority = "normal",
        seed: int = 7,
        fault: FaultHook | None = None,
    ) -> BatchRecord:
        """Accept a generated batch as ``POST /batches`` would; returns its record."""
        return self.accept_body(batch_file(transactions, seed=seed), priority=priority, fault=fault)

    def accept_body(
        self, data: bytes, *, priority: Priority = "normal", fault: FaultHook | None = None
    ) -> BatchRecord:
        publisher = Publisher(self.storage, self.bus, self.settings, fault=fault)
        acceptance = BatchAcceptance(publisher, self.pricebooks(), self.settings)
        request = BatchRequest(priority=priority, content_type="text/csv", content_encoding=None)
        return acceptance.accept(BytesBody(data), request).record

    def pricebooks(self) -> PricebookStore:
        return PricebookStore(self.storage.container(self.settings.control_container))


def bench_settings(root: Path, connection_string: str | None = None, **extra: Any) -> Settings:
    """Settings of a benchmark deployment; ``.env`` files and ``BILLING_*`` are ignored.

    Benchmarks send the same generated files again on purpose (rounds, pairs): the
    refusal of a body sent twice is off."""
    values: dict[str, Any] = {"data_dir": root / "data", "duplicate_body_window_seconds": 0}
    if connection_string is not None:
        values["storage_connection_string"] = connection_string
    return Settings(_env_file=None, **(values | extra))  # type: ignore[call-arg]


@contextmanager
def azurite_connection_string() -> Iterator[str]:
    """A fresh Azurite for the duration of the block (installed from npm if missing)."""
    from billing.devtools.azurite import AzuriteServer, azurite_dir, ensure_azurite

    server = AzuriteServer(ensure_azurite(azurite_dir()))
    try:
        yield server.start().connection_string
    finally:
        server.close()


@contextmanager
def open_deployment(backend: Backend, **settings: Any) -> Iterator[Deployment]:
    """Provisioned storage and bus on ``backend`` with the sample pricebook installed."""
    with ExitStack() as stack:
        root = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="billing-bench-")))
        connection_string = None
        if backend == "azurite":
            connection_string = stack.enter_context(azurite_connection_string())
        config = bench_settings(root, connection_string, **settings)
        deployment = stack.enter_context(Deployment(backend, config))
        deployment.pricebooks().install_if_missing(sample_pricebook())
        yield deployment

"""What the routes need, built once at start-up and handed out by FastAPI dependencies.

Start-up (:func:`open_services`) is where the initiator gets ready to take batches: storage
and the trigger bus are opened, every queue, container and table is ensured, the sample
pricebook is installed if none is current, and orphans of a crashed intake are swept (then
every few minutes while it runs). Each step is tried again after a transient storage failure
(:mod:`shared.storage.transient`): a throttled request must not stop the initiator starting.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

from azure.core.exceptions import AzureError
from fastapi import Request
from sqlalchemy import Engine

from initiator.acceptance import BatchAcceptance
from initiator.intake_helpers import helper_count, shared_helpers
from initiator.publishing import FaultHook, OrphanSweeper, Publisher, sweep_orphans
from initiator.uploads.service import Uploads
from initiator.uploads.sweep import sweep_uploads
from shared.bus import open_bus
from shared.bus.ports import TriggerBus
from shared.contracts.batch_records import BatchRecords
from shared.domain.pricebook import sample_pricebook
from shared.domain.pricebook_store import PricebookStore
from shared.provision import ensure_resources
from shared.settings import Settings
from shared.storage import open_storage
from shared.storage.ports import StorageAccount
from shared.storage.transient import retry_transient
from shared.warehouse import make_engine
from shared.warehouse.invoices import InvoiceReader

log = logging.getLogger(__name__)


@dataclass
class Services:
    settings: Settings
    storage: StorageAccount
    bus: TriggerBus
    pricebooks: PricebookStore
    records: BatchRecords
    acceptance: BatchAcceptance
    publisher: Publisher = field(repr=False)
    #: the warehouse, read-only here (invoices); the controller migrates it
    invoices: InvoiceReader = field(repr=False)
    warehouse: Engine = field(repr=False)
    sweeper: OrphanSweeper = field(repr=False)
    uploads: Uploads = field(repr=False)
    #: False when storage and bus were handed in (all-in-one mode): their owner closes them
    owns_connections: bool = True

    def close(self) -> None:
        self.sweeper.close()
        self.publisher.close()
        self.warehouse.dispose()
        if self.owns_connections:
            self.bus.close()
            self.storage.close()


def open_services(
    settings: Settings,
    *,
    fault: FaultHook | None = None,
    connections: tuple[StorageAccount, TriggerBus] | None = None,
) -> Services:
    """Open and prepare everything the initiator uses (blocking: call from a thread).

    ``connections``: an open storage account and bus to use instead of opening them (all-in-one
    mode shares them with the workers of the process); they are left open at close."""
    storage, bus = connections or (open_storage(settings), open_bus(settings))
    ensure_resources(settings, storage, bus)
    pause = settings.storage_retry_backoff_seconds
    pricebooks = PricebookStore(storage.container(settings.control_container))
    retry_transient(
        lambda: pricebooks.install_if_missing(sample_pricebook()),
        what="installing the sample pricebook",
        pause=pause,
    )
    sweep_at_start(storage, settings)
    sweeper = OrphanSweeper(storage, settings)
    sweeper.start()
    publisher = Publisher(storage, bus, settings, fault=fault)
    processes = helper_count(settings.intake_processes)
    # The process's pool, not the app's: it outlives this app (intake_helpers).
    helpers = (
        shared_helpers(processes, gc_young_threshold=settings.gc_young_threshold)
        if processes
        else None
    )
    if helpers is not None:
        helpers.start()
    # Read-only: connects on first use only, and never takes SQLite's write lock.
    warehouse = make_engine(settings.resolved_warehouse_url, read_only=True)
    acceptance = BatchAcceptance(publisher, pricebooks, settings, helpers=helpers)
    return Services(
        settings=settings,
        storage=storage,
        bus=bus,
        pricebooks=pricebooks,
        records=publisher.records,
        acceptance=acceptance,
        publisher=publisher,
        invoices=InvoiceReader(warehouse),
        warehouse=warehouse,
        sweeper=sweeper,
        uploads=Uploads.open(storage, settings, acceptance),
        owns_connections=connections is None,
    )


def sweep_at_start(storage: StorageAccount, settings: Settings) -> None:
    """Sweep the orphans a crashed intake left. Not needed to serve: a sweep that fails (the
    storage throttling, say) is left to the sweeper's next round, not a reason to stop."""
    try:
        retry_transient(
            lambda: (sweep_orphans(storage, settings), sweep_uploads(storage, settings)),
            what="the orphan sweep at start",
            pause=settings.storage_retry_backoff_seconds,
        )
    except AzureError:
        log.warning(
            "the orphan sweep at start failed; the sweeper tries again in %.0f s",
            settings.orphan_sweep_seconds,
            exc_info=True,
        )


def get_services(request: Request) -> Services:
    services: Services = request.app.state.services
    return services

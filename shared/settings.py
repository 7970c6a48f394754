"""All settings in one typed place (environment variables ``BILLING_*`` or a ``.env`` file).

A first run needs none: storage and the trigger bus default to the embedded backend in
``./.billing`` and the warehouse to a SQLite file there. Setting a storage connection string
(Azurite) or account URL (Azure, with ``DefaultAzureCredential``) switches storage to the
Azure SDKs; likewise for Service Bus.
"""

from __future__ import annotations

from functools import cached_property
from pathlib import Path
from typing import Annotated, Any, Self

from pydantic import Field, SecretStr, field_validator, model_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

from shared.gc_tuning import DEFAULT_YOUNG_THRESHOLD
from shared.contracts.chunk_result import ResultFormat
from shared.domain.priority import PRIORITIES, Priority
from shared.faults.spec import FaultSpec

#: The largest chunk when neither ``chunk_size`` nor ``max_chunk_size`` is set: a 32,000-row
#: payload blob is ~575 KB (3.2 MB of JSON) and is rated in well under a second; 200,000
#: transactions make 10 chunks, not the 15 of a 16,000 cap (bench/README.md, "Issue 12,
#: session 13").
DEFAULT_MAX_CHUNK_SIZE = 32_000


def _split_csv(value: object) -> object:
    """``"a, b"`` → ``["a", "b"]``: list settings are plain comma-separated strings."""
    if isinstance(value, str):
        return [part.strip() for part in value.split(",") if part.strip()]
    return value


class Settings(BaseSettings):
    model_config = SettingsConfigDict(
        env_prefix="BILLING_", env_file=".env", extra="ignore", frozen=True
    )

    # --- where things live -------------------------------------------------------------
    data_dir: Path = Path(".billing")
    storage_connection_string: SecretStr | None = None
    storage_account_url: str | None = None
    servicebus_connection_string: SecretStr | None = None
    servicebus_namespace: str | None = None
    #: Create Service Bus subscriptions with the administration client (needs RBAC
    #: "Azure Service Bus Data Owner"); otherwise they must exist (Bicep, emulator config).
    servicebus_manage_entities: bool = False
    warehouse_url: str | None = None
    #: Create the queues, containers, tables (and topic) at start. Off where Bicep declares
    #: them and the roles' identities have data rights only (``infra/``).
    provision_resources: bool = True
    #: A port where a worker role (processor, controller) answers ``GET /healthz``, for a
    #: platform's liveness and readiness probes; unset: none.
    health_port: int | None = Field(default=None, ge=1, le=65535)

    # --- the initiator's HTTP API --------------------------------------------------------
    api_keys: Annotated[list[SecretStr], NoDecode] = Field(default_factory=list)
    insecure_local: bool = False
    host: str = "127.0.0.1"
    port: int = 8000
    max_body_bytes: int = 2 * 1024**3
    #: The batch file after gzip inflation: 1 GiB holds the 1 GB batches the design expects
    #: and bounds what one small compressed body can make a sample deployment parse.
    max_decompressed_bytes: int = 1024**3
    #: Where ``Location`` and ``status_url`` point, e.g. ``https://billing.example.com``;
    #: unset: relative URLs (``/batches/{id}``). Never taken from the request's ``Host``.
    public_base_url: str | None = None
    #: An intake whose record has been silent this long died (a live upload refreshes it
    #: every minute): the sweeper removes it and frees its Idempotency-Key.
    orphan_age_seconds: float = Field(default=300.0, gt=0)
    #: How often a running initiator sweeps orphans (a table query per status each time).
    orphan_sweep_seconds: float = Field(default=300.0, gt=0)

    # --- hostile clients: every wait of the HTTP API is bounded ------------------------
    #: A request's headers must be complete this long after its first byte (else 408).
    request_header_timeout_seconds: float = Field(default=10.0, gt=0)
    #: ``POST /batches``: the longest wait for the next piece of the body (else 408).
    request_body_idle_timeout_seconds: float = Field(default=30.0, gt=0)
    #: ``POST /batches``: the slowest average upload, after an idle timeout's grace (else 408).
    request_body_min_bytes_per_second: int = Field(default=10_000, ge=1)
    #: Batches read at once, each on a worker thread of its own; one more is answered 503
    #: with ``Retry-After`` at once, so intakes never starve the other routes.
    max_concurrent_intakes: int = Field(default=4, ge=1)

    # --- names of queues, containers, tables, topic --------------------------------------
    work_queue_prefix: str = "work"
    partitions: int = Field(default=4, ge=1, le=64)
    output_queue: str = "results"
    payload_container: str = "payloads"
    results_container: str = "results"
    control_container: str = "control"
    batches_table: str = "batches"
    chunks_table: str = "chunks"
    heartbeats_table: str = "processors"
    trigger_topic: str = "triggers"

    # --- intake --------------------------------------------------------------------------
    #: A batch's first chunk; each next one is twice as large, up to ``max_chunk_size``:
    #: small batches still make enough chunks for every processor, large ones few requests.
    chunk_size: int = Field(default=2000, ge=1, le=50_000)
    #: 0 (unset): ``DEFAULT_MAX_CHUNK_SIZE``, or ``chunk_size`` itself when that is set, so
    #: that an explicit chunk size stays a fixed one. Never below ``chunk_size``.
    max_chunk_size: int = Field(default=0, ge=0, le=50_000)
    #: Helper processes that validate a clean CSV or JSON Lines file in runs of lines
    #: (chunks, or parts of the larger ones) while the request's thread reads, stores and
    #: checks across them (initiator.segmented_read); a file they do not pass is read
    #: again by the one reader that words rejections. 0: one per core when there are two
    #: or more, else none; 1: none (one thread reads every batch). Each helper costs
    #: ~50 MB once started, which is when a batch first needs a second chunk.
    intake_processes: int = Field(default=0, ge=0, le=64)
    #: The most lines a helper validates at once: a chunk larger than this is checked in
    #: several segments and stored as one, so that a helper's memory (~1 KB a line while it
    #: checks) does not grow with ``max_chunk_size``.
    intake_segment_lines: int = Field(default=16_000, ge=1, le=50_000)

    # --- listeners --------------------------------------------------------------------
    dequeue_batch_size: int = Field(default=32, ge=1, le=32)
    #: A processor's receives take at most this many work items: one to rate while the
    #: next one's payload downloads. A chunk takes a tenth of a second or more to rate, so
    #: items taken beyond that only wait in this process while another one idles: with 32
    #: the two processes of the 200,000-transaction demo finished 0.1-0.23 s apart, with
    #: 1 or 2 within 0.07 s (bench/README.md, "Issue 12, session 18").
    processor_dequeue_batch_size: int = Field(default=2, ge=1, le=32)
    visibility_timeout_seconds: int = Field(default=60, ge=1, le=7 * 24 * 3600)
    max_dequeue_count: int = Field(default=5, ge=1)
    backoff_delta_ms: int = Field(default=100, ge=1)
    backoff_min_idle_ms: int = Field(default=100, ge=0)
    backoff_max_idle_ms: int = Field(default=30_000, ge=1)
    #: with the trigger, the idle tick: a read of the work signal (processors), or of every
    #: queue's depth; a lost trigger waits at most this long (bench/README.md, "idle")
    safety_poll_seconds: float = Field(default=120.0, gt=0)
    #: an idle processor's full look at every queue, for work whose trigger and work
    #: signal were both lost (a crash between sending work items and the signal)
    quiet_rescan_seconds: float = Field(default=3600.0, gt=0)
    #: a processor asks a queue it found empty again only this long after that answer,
    #: whether its threads are busy on other queues or backing off (new work comes with a
    #: trigger naming the queue and with the work signal; this is for a crashed peer's
    #: messages whose lease ran out, and work whose trigger was lost). The default is the
    #: back-off cap: a thread asks each empty queue once at the start of its back-off and
    #: once before it retires, instead of in every one of its ~9 rounds, and a thread rating
    #: normal work does not ask the empty high queues between chunks (bench/README.md,
    #: "empty receives").
    idle_rescan_seconds: float = Field(default=30.0, gt=0)
    #: depth threshold → thread count, e.g. "0:1,64:2,512:4" (see shared.listener.scaling).
    #: One thread per process by default: on the 2-core reference machine no thread count
    #: beat one (whose 4 handlers already overlap I/O) and each extra thread cost CPU and
    #: requests (bench/README.md, "scaling"); raise it where storage latency is higher.
    scaling_rule: str = "0:1"
    max_dequeue_threads: int = Field(default=8, ge=1)
    processor_priorities: Annotated[list[Priority], NoDecode] = Field(
        default_factory=lambda: list(PRIORITIES)
    )
    #: Transactions one processor process rates at once across its handlers
    #: (processor.row_budget): two chunks of the largest size, so that memory stays a few
    #: chunks' worth (~2 KB a transaction) whatever ``max_chunk_size``.
    processor_rows_in_flight: int = Field(default=64_000, ge=1)
    #: A processor's handlers take turns to rate (processor.rating_step): rating holds the
    #: GIL, so chunks rated at once only interleave and a batch's small first chunk came out
    #: as late as the large ones beside it; in turns each is rated straight through while
    #: the others fetch and store. false: they rate at once, to measure the difference.
    processor_rating_turns: bool = True
    #: The form a processor's results travel in (shared.contracts.chunk_result): ``sqlite``,
    #: a database image a SQLite warehouse copies without a Python object per row (the
    #: controller's CPU a transaction 4.05 -> 2.49 µs), or ``json``, rows that PostgreSQL's
    #: COPY takes faster (an image cost it 1.1 µs more a transaction: bench/README.md,
    #: "Issue 12, session 17"). Set it for the deployment's warehouse; the controller reads both.
    result_format: ResultFormat = "sqlite"

    # --- order ids --------------------------------------------------------------------
    #: One conditional write of the counter blob per range: with chunks of up to 32,000 a
    #: range of 10,000 cost a get and a put on almost every chunk; a crash loses at most
    #: one range of the 2**63 ids a BIGINT holds.
    id_range_size: int = Field(default=100_000, ge=1)
    id_max_retries: int = Field(default=50, ge=1)

    # --- controller -----------------------------------------------------------------------
    #: On SQLite the controller's handlers take turns to decode and write a result
    #: (controller.write_turns); false lets them meet in SQLite's busy handler, to measure.
    controller_write_turns: bool = True
    #: The controller's back-off on the output queue, gentler than the processors': a
    #: batch's first results come a fraction of a second after its trigger and the
    #: controller is the pipeline's last step, so every tenth of a second it sleeps past
    #: one is added to the batch's time. 50 ms and 20 ms look again at 0.05, 0.12, 0.23,
    #: 0.42 s… instead of 0.1, 0.3, 0.7 s…: a few more receives a batch, for
    #: 0.2-0.4 s less to close a 200,000-transaction one (bench/README.md, "Issue 12,
    #: session 15"). The cap is still ``backoff_max_idle_ms``.
    controller_backoff_min_idle_ms: int = Field(default=50, ge=0)
    controller_backoff_delta_ms: int = Field(default=20, ge=1)
    #: For this long after a trigger the controller's empty receives do not lengthen its
    #: back-off: it looks every ``controller_backoff_min_idle_ms`` until the batch's first
    #: results come (a processor rates a first chunk in 0.1-0.4 s, more when busy), at
    #: most 20 receives a trigger. 0: the back-off grows from the first empty receive.
    controller_wake_hold_ms: int = Field(default=1000, ge=0)

    # --- start-up: how long a role waits for storage, bus and warehouse (billing.startup) --
    startup_timeout_seconds: float = Field(default=300.0, gt=0)
    #: a file the processor and controller touch while healthy (shared.liveness); unset: none
    liveness_file: Path | None = None
    liveness_interval_seconds: float = Field(default=10.0, gt=0)

    # --- the Python runtime: the cyclic garbage collector (shared.gc_tuning); 0: Python's --
    gc_young_threshold: int = Field(default=DEFAULT_YOUNG_THRESHOLD, ge=0)

    # --- Azure SDK retry: short, so a test or a demo never waits 15 s on a hiccup --------
    storage_retry_total: int = Field(default=5, ge=0)
    storage_retry_backoff_seconds: float = Field(default=0.4, ge=0)

    # --- fault injection, a test tool: off unless set (shared.faults) ----------------------
    #: e.g. ``"fail=0.1,lose=0.02,seed=7"``: that share of storage and bus requests fails
    #: (see :mod:`shared.faults.spec` for every key). Every process logs it loudly when set.
    faults: Annotated[FaultSpec | None, NoDecode] = None

    @field_validator("faults", mode="before")
    @classmethod
    def _fault_spec(cls, value: object) -> object:
        if isinstance(value, str):
            return FaultSpec.parse(value) if value.strip() else None
        return value

    @model_validator(mode="before")
    @classmethod
    def _largest_chunk(cls, data: Any) -> Any:
        """Resolve an unset ``max_chunk_size`` (it depends on whether ``chunk_size`` is set)."""
        if isinstance(data, dict) and str(data.get("max_chunk_size") or 0) == "0":
            fixed = data.get("chunk_size")
            data = {**data, "max_chunk_size": fixed or DEFAULT_MAX_CHUNK_SIZE}
        return data

    @model_validator(mode="after")
    def _largest_chunk_not_below_the_first(self) -> Self:
        if self.max_chunk_size < self.chunk_size:
            raise ValueError(
                f"max_chunk_size {self.max_chunk_size} is below chunk_size {self.chunk_size}"
            )
        return self

    @field_validator("api_keys", "processor_priorities", mode="before")
    @classmethod
    def _comma_separated(cls, value: object) -> object:
        return _split_csv(value)

    # --- derived -------------------------------------------------------------------------
    @property
    def uses_azure_storage(self) -> bool:
        return bool(self.storage_connection_string or self.storage_account_url)

    @property
    def uses_servicebus(self) -> bool:
        return bool(self.servicebus_connection_string or self.servicebus_namespace)

    @cached_property
    def resolved_warehouse_url(self) -> str:
        if self.warehouse_url:
            return self.warehouse_url
        return f"sqlite:///{(self.data_dir / 'warehouse.sqlite3').resolve()}"

    def work_queue(self, priority: Priority, partition: int) -> str:
        """Name of one partition of one priority's work queue, e.g. ``work-high-0``."""
        return f"{self.work_queue_prefix}-{priority}-{partition}"

    def work_queues(self, priority: Priority) -> list[str]:
        return [self.work_queue(priority, p) for p in range(self.partitions)]

    def all_work_queues(self) -> list[str]:
        return [name for priority in PRIORITIES for name in self.work_queues(priority)]

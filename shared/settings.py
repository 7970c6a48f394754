"""All settings in one typed place (environment variables ``BILLING_*`` or a ``.env`` file).

A first run needs none: storage and the trigger bus default to the embedded backend in
``./.billing`` and the warehouse to a SQLite file there. Setting a storage connection string
(Azurite) or account URL (Azure, with ``DefaultAzureCredential``) switches storage to the
Azure SDKs; likewise for Service Bus.

Every setting has a tier and a one-line description, from which ``docs/settings.md`` is
generated (``python -m shared.settings_doc``):

* ``connect``: where storage, the bus and the warehouse are, the API keys, the public URL;
* ``operate``: limits, timeouts, priorities, processes;
* ``tune``: the rest, knobs for performance and for measuring it.

Durations are seconds, except the listener back-off's steps, which are milliseconds
(``*_ms``); :mod:`shared.listener_settings` turns those into the listener's seconds.
"""

from __future__ import annotations

from functools import cached_property
from pathlib import Path
from typing import Annotated, Any, Literal, Self

from pydantic import Field, SecretStr, field_validator, model_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

from shared.contracts.chunk_result import ResultFormat
from shared.domain.priority import PRIORITIES, Priority
from shared.faults.spec import FaultSpec
from shared.gc_tuning import DEFAULT_YOUNG_THRESHOLD

Tier = Literal["connect", "operate", "tune"]
TIERS: tuple[Tier, ...] = ("connect", "operate", "tune")

#: The largest chunk when neither ``chunk_size`` nor ``max_chunk_size`` is set: a 32,000-row
#: payload blob is ~575 KB and is rated in well under a second, and a 200,000-transaction
#: batch makes 10 chunks (``python -m bench.end_to_end``).
DEFAULT_MAX_CHUNK_SIZE = 32_000


def setting(default: Any = None, *, tier: Tier, description: str, **constraints: Any) -> Any:
    """A settings field with its tier and its one-line meaning (both shown in docs/settings.md)."""
    extra: dict[str, Any] = {"tier": tier}
    if "default_factory" in constraints:
        return Field(description=description, json_schema_extra=extra, **constraints)
    return Field(default, description=description, json_schema_extra=extra, **constraints)


def _split_csv(value: object) -> object:
    """``"a, b"`` → ``["a", "b"]``: list settings are plain comma-separated strings."""
    if isinstance(value, str):
        return [part.strip() for part in value.split(",") if part.strip()]
    return value


class Settings(BaseSettings):
    model_config = SettingsConfigDict(
        env_prefix="BILLING_", env_file=".env", extra="ignore", frozen=True
    )

    # --- connect: where things live, who may call -------------------------------------
    data_dir: Path = setting(
        Path(".billing"), tier="connect", description="folder of the embedded backend"
    )
    storage_connection_string: SecretStr | None = setting(
        tier="connect",
        description="Azure Storage connection string (Azurite); set: storage uses the Azure SDKs",
    )
    storage_account_url: str | None = setting(
        tier="connect",
        description="Azure Storage account URL, signed in with DefaultAzureCredential",
    )
    servicebus_connection_string: SecretStr | None = setting(
        tier="connect",
        description="Service Bus connection string (emulator) for the trigger topic",
    )
    servicebus_namespace: str | None = setting(
        tier="connect",
        description="Service Bus namespace host, signed in with DefaultAzureCredential",
    )
    warehouse_url: str | None = setting(
        tier="connect",
        description="SQLAlchemy URL of the warehouse; unset: a SQLite file in the data dir",
    )
    api_keys: Annotated[list[SecretStr], NoDecode] = setting(
        tier="connect",
        description="comma-separated API keys accepted as Authorization: Bearer KEY",
        default_factory=list,
    )
    #: Never taken from the request's ``Host``: a client could point links elsewhere.
    public_base_url: str | None = setting(
        tier="connect",
        description="base of Location and status_url, e.g. https://billing.example.com",
    )

    # --- operate: the deployment --------------------------------------------------------
    #: Needs RBAC "Azure Service Bus Data Owner"; otherwise Bicep or the emulator's config
    #: declares the subscriptions.
    servicebus_manage_entities: bool = setting(
        False, tier="operate", description="create Service Bus subscriptions at start"
    )
    #: Off where Bicep declares them and the roles' identities have data rights only.
    provision_resources: bool = setting(
        True, tier="operate", description="create queues, containers, tables, topic at start"
    )
    health_port: int | None = setting(
        tier="operate",
        description="port where a processor or controller answers GET /healthz; unset: none",
        ge=1,
        le=65535,
    )
    insecure_local: bool = setting(
        False, tier="operate", description="let the initiator start without an API key"
    )
    host: str = setting("127.0.0.1", tier="operate", description="initiator's listen address")
    port: int = setting(8000, tier="operate", description="initiator's listen port")
    max_body_bytes: int = setting(
        2 * 1024**3, tier="operate", description="largest POST /batches body, bytes"
    )
    #: 1 GiB holds the 1 GB batches the design expects and bounds what one small
    #: compressed body can make a sample deployment parse.
    max_decompressed_bytes: int = setting(
        1024**3, tier="operate", description="largest batch file after gzip inflation, bytes"
    )
    #: A live upload refreshes its record every minute.
    orphan_age_seconds: float = setting(
        300.0,
        tier="operate",
        description="an intake silent this long died: its record and Idempotency-Key go",
        gt=0,
    )
    orphan_sweep_seconds: float = setting(
        300.0, tier="operate", description="how often the initiator sweeps orphans", gt=0
    )
    #: One table write per batch; 0 turns the check off (bench.intake measures the cost).
    duplicate_body_window_seconds: float = setting(
        86_400.0,
        tier="operate",
        description="a body identical to one accepted this recently is refused (409); 0: off",
        ge=0,
    )
    #: One listing per batch, one download per new batch in the window, the batch's ids
    #: x 8 bytes written (docs/intake.md, "The same file twice").
    duplicate_transaction_ids: bool = setting(
        False,
        tier="operate",
        description="also refuse (409) a batch holding a transaction id accepted in another "
        "live batch within the duplicate-body window",
    )
    #: Renewed every third of it from the claim to ``accepted``, which takes seconds.
    intake_lease_seconds: float = setting(
        15.0,
        tier="operate",
        description="a claimed Idempotency-Key whose intake is silent this long is taken over",
        gt=0,
    )
    request_header_timeout_seconds: float = setting(
        10.0, tier="operate", description="a request's headers must arrive in this (else 408)", gt=0
    )
    request_body_idle_timeout_seconds: float = setting(
        30.0,
        tier="operate",
        description="longest wait for the next piece of a body (else 408)",
        gt=0,
    )
    request_body_min_bytes_per_second: int = setting(
        10_000,
        tier="operate",
        description="slowest average upload after the idle grace, bytes/s (else 408)",
        ge=1,
    )
    #: One more is answered 503 with Retry-After, so intakes never starve the other routes.
    max_concurrent_intakes: int = setting(
        4, tier="operate", description="batches read at once, each on its own thread", ge=1
    )
    max_intakes_per_sender: int = setting(
        0,
        tier="operate",
        description="batches one sender (API key) may have read at once; 0: all slots but one",
        ge=0,
    )
    #: Each helper costs ~50 MB once started, when a batch first needs a second chunk; a file
    #: they do not pass is read again by the one reader that words rejections.
    intake_processes: int = setting(
        0,
        tier="operate",
        description="intake helper processes; 0: one per core when 2 or more, 1: none",
        ge=0,
        le=64,
    )
    partitions: int = setting(
        4, tier="operate", description="work queues per priority", ge=1, le=64
    )
    visibility_timeout_seconds: int = setting(
        60,
        tier="operate",
        description="how long a received message stays hidden from other consumers",
        ge=1,
        le=7 * 24 * 3600,
    )
    max_dequeue_count: int = setting(
        5, tier="operate", description="a message dequeued more often goes to poison", ge=1
    )
    processor_priorities: Annotated[list[Priority], NoDecode] = setting(
        tier="operate",
        description="comma-separated priorities a processor takes (high, normal, low)",
        default_factory=lambda: list(PRIORITIES),
    )
    #: Each block of an upload is refused past it; a client needing more asks again.
    upload_expiry_seconds: float = setting(
        1800.0,
        tier="operate",
        description="how long a POST /uploads grant (write-only SAS) lets the client write",
        gt=0,
    )
    #: Longer than any grant, so that a blob still being written is never swept.
    upload_orphan_age_seconds: float = setting(
        21_600.0,
        tier="operate",
        description="an uploaded blob no batch took within this is swept, with its grant",
        gt=0,
    )
    #: bench/upload.py measures both paths; docs/uploads.md gives the figures.
    submit_via_upload_bytes: int = setting(
        256 * 1024**2,
        tier="operate",
        description="billing submit uploads a file at least this large to storage first",
        ge=0,
    )
    startup_timeout_seconds: float = setting(
        300.0,
        tier="operate",
        description="how long a role waits for storage, bus and warehouse at start",
        gt=0,
    )
    liveness_file: Path | None = setting(
        tier="operate",
        description="file a processor or controller touches while healthy; unset: none",
    )
    liveness_interval_seconds: float = setting(
        10.0, tier="operate", description="how often the liveness file is touched", gt=0
    )
    #: Far above the longest legitimate handling (one storage request whose every retry
    #: times out: ~8 min), whose lease is renewed meanwhile; see docs/decisions/0060.
    wedged_handler_seconds: float = setting(
        600.0,
        tier="operate",
        description="a handler busy this long with one message makes its role not ready",
        gt=0,
    )

    # --- tune: names ---------------------------------------------------------------------
    work_queue_prefix: str = setting(
        "work", tier="tune", description="work queues are <prefix>-<priority>-<partition>"
    )
    output_queue: str = setting("results", tier="tune", description="queue of chunk results")
    payload_container: str = setting(
        "payloads", tier="tune", description="blob container of chunk payloads"
    )
    upload_container: str = setting(
        "incoming", tier="tune", description="blob container of batch files uploaded by senders"
    )
    results_container: str = setting(
        "results", tier="tune", description="blob container of chunk results"
    )
    control_container: str = setting(
        "control", tier="tune", description="blob container of counters, gate, pricebooks"
    )
    batches_table: str = setting("batches", tier="tune", description="table of batch records")
    chunks_table: str = setting("chunks", tier="tune", description="table of failed chunks")
    heartbeats_table: str = setting(
        "processors", tier="tune", description="table of processor heartbeats"
    )
    trigger_topic: str = setting("triggers", tier="tune", description="Service Bus trigger topic")

    # --- operate: batch events (controller.events, docs/events.md) ------------------------
    events_topic: str = setting(
        "batch-events", tier="tune", description="Service Bus topic of batch outcome events"
    )
    #: A query of an index in the warehouse; no storage request.
    events_relay_poll_seconds: float = setting(
        1.0,
        tier="tune",
        description="how often the controller's relay looks for events and deliveries due",
        gt=0,
    )
    webhook_secret: SecretStr | None = setting(
        None,
        tier="operate",
        description="Standard Webhooks signing secret, whsec_<base64>; unset: no webhooks",
    )
    webhook_urls: Annotated[list[str], NoDecode] = setting(
        tier="operate",
        description="URLs every batch event is delivered to, besides each batch's callback",
        default_factory=list,
    )
    #: Standard Webhooks' own schedule: 8 attempts over at least 27 hours.
    webhook_retry_schedule: Annotated[list[float], NoDecode] = setting(
        tier="tune",
        description="seconds before each attempt of a delivery, the first from the event",
        default_factory=lambda: [0.0, 5.0, 300.0, 1800.0, 7200.0, 18000.0, 36000.0, 36000.0],
    )
    webhook_retry_jitter: float = setting(
        0.2,
        tier="tune",
        description="each retry wait is lengthened by up to this share of itself, at random",
        ge=0,
        lt=1,
    )
    webhook_timeout_seconds: float = setting(
        10.0, tier="tune", description="how long one webhook delivery may take", gt=0
    )
    callback_allowed_networks: Annotated[list[str], NoDecode] = setting(
        tier="operate",
        description="private networks a callback URL may reach (e.g. 127.0.0.0/8); none",
        default_factory=list,
    )

    # --- tune: intake --------------------------------------------------------------------
    #: Small batches still make enough chunks for every processor, large ones few requests.
    chunk_size: int = setting(
        2000,
        tier="tune",
        description="a batch's first chunk; each next one doubles up to max_chunk_size",
        ge=1,
        le=50_000,
    )
    max_chunk_size: int = setting(
        0,
        tier="tune",
        description="largest chunk; 0: 32,000, or chunk_size when that is set",
        ge=0,
        le=50_000,
    )
    #: A helper holds ~1 KB a line while it checks, so this bounds its memory whatever the
    #: chunk size.
    intake_segment_lines: int = setting(
        16_000,
        tier="tune",
        description="most lines an intake helper checks at once",
        ge=1,
        le=50_000,
    )

    # --- tune: listeners -----------------------------------------------------------------
    dequeue_batch_size: int = setting(
        32, tier="tune", description="messages a receive takes (Azure's ceiling: 32)", ge=1, le=32
    )
    #: A chunk takes a tenth of a second or more to rate: items taken beyond one to rate and
    #: one downloading only wait here while another process idles.
    processor_dequeue_batch_size: int = setting(
        2, tier="tune", description="work items a processor's receive takes", ge=1, le=32
    )
    backoff_delta_ms: int = setting(
        100, tier="tune", description="empty-queue back-off step, milliseconds", ge=1
    )
    backoff_min_idle_ms: int = setting(
        100, tier="tune", description="shortest empty-queue back-off, milliseconds", ge=0
    )
    backoff_max_idle_ms: int = setting(
        30_000, tier="tune", description="longest empty-queue back-off, milliseconds", ge=1
    )
    safety_poll_seconds: float = setting(
        120.0,
        tier="tune",
        description="idle tick beside the trigger: a lost trigger waits at most this long",
        gt=0,
    )
    #: For work whose trigger and work signal were both lost (a crash between the two).
    quiet_rescan_seconds: float = setting(
        3600.0, tier="tune", description="an idle processor's full look at every queue", gt=0
    )
    #: New work comes with a trigger naming the queue; this is for a crashed peer's messages
    #: whose lease ran out and work whose trigger was lost.
    idle_rescan_seconds: float = setting(
        30.0, tier="tune", description="a queue found empty is asked again after this", gt=0
    )
    #: One thread per process: on a 2-core machine no thread count beat one (its 4 handlers
    #: already overlap I/O); raise it where storage latency is higher (bench.scaling).
    scaling_rule: str = setting(
        "0:1", tier="tune", description="queue depth → dequeue threads, e.g. 0:1,64:2,512:4"
    )
    max_dequeue_threads: int = setting(
        8, tier="tune", description="most dequeue threads a listener runs", ge=1
    )
    #: Two chunks of the largest size: memory stays a few chunks' worth (~2 KB a transaction).
    processor_rows_in_flight: int = setting(
        64_000, tier="tune", description="transactions a processor rates at once", ge=1
    )
    #: Rating holds the GIL, so chunks rated at once only interleave; in turns each is rated
    #: straight through while the others fetch and store.
    processor_rating_turns: bool = setting(
        True, tier="tune", description="a processor's handlers take turns to rate"
    )
    #: ``sqlite``: an image a SQLite warehouse copies without a Python object per row;
    #: ``json``: rows PostgreSQL's COPY takes faster. The controller reads both.
    result_format: ResultFormat = setting(
        "sqlite", tier="tune", description="form of chunk results: sqlite or json"
    )

    # --- tune: order ids -------------------------------------------------------------------
    #: One conditional write of the counter blob per range; a crash loses at most one range
    #: of the 2**63 ids a BIGINT holds.
    id_range_size: int = setting(
        100_000, tier="tune", description="order ids taken from the counter blob at once", ge=1
    )
    id_max_retries: int = setting(
        50, tier="tune", description="tries of the counter blob's conditional write", ge=1
    )

    # --- tune: controller --------------------------------------------------------------------
    controller_write_turns: bool = setting(
        True, tier="tune", description="on SQLite, the controller's handlers take turns to write"
    )
    #: Gentler than the processors': a batch's results follow its trigger within a fraction
    #: of a second and the controller is the last step, so time it sleeps past them adds to
    #: the batch's. The cap is ``backoff_max_idle_ms``.
    controller_backoff_min_idle_ms: int = setting(
        50, tier="tune", description="controller's shortest back-off, milliseconds", ge=0
    )
    controller_backoff_delta_ms: int = setting(
        20, tier="tune", description="controller's back-off step, milliseconds", ge=1
    )
    controller_wake_hold_ms: int = setting(
        1000,
        tier="tune",
        description="after a trigger the controller's back-off stays short this long, ms",
        ge=0,
    )

    # --- tune: runtime ---------------------------------------------------------------------
    gc_young_threshold: int = setting(
        DEFAULT_YOUNG_THRESHOLD,
        tier="tune",
        description="allocations between young garbage collections; 0: Python's settings",
        ge=0,
    )
    malloc_arena_max: int = setting(
        2,
        tier="tune",
        description="glibc malloc arenas a role process may create; 0: glibc's default",
        ge=0,
    )
    #: Short, so a test or a demo never waits 15 s on a hiccup.
    storage_retry_total: int = setting(
        5, tier="tune", description="Azure SDK retries of a storage request", ge=0
    )
    storage_retry_backoff_seconds: float = setting(
        0.4, tier="tune", description="Azure SDK back-off between storage retries", ge=0
    )
    #: Every process logs it loudly when set (see :mod:`shared.faults.spec` for every key).
    faults: Annotated[FaultSpec | None, NoDecode] = setting(
        tier="tune",
        description="test tool: share of storage and bus requests that fail, e.g. fail=0.1",
    )

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

    @field_validator(
        "api_keys",
        "processor_priorities",
        "webhook_urls",
        "webhook_retry_schedule",
        "callback_allowed_networks",
        mode="before",
    )
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

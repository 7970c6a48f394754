"""The release gate (docs/patterns.md).

Pre-started workers wait until an operator releases them. Two mechanisms, combined:

* a **blob flag** (``gate/state.json`` in the control container) is the durable truth: a
  worker reads it when it starts, so a worker started after the release proceeds at once,
  and again whenever the work signal moves (:mod:`shared.coordination.work_signal`), which
  :func:`set_gate` moves after writing the flag: a lost broadcast costs at most one safety
  tick, and an idle worker pays for no gate read until something changed;
* a **broadcast** on the trigger topic (:class:`~shared.contracts.messages.GateEvent`, with the
  application properties :data:`GATE_PROPERTIES`) makes a release instant for workers
  already waiting: every processor subscription has a rule that selects it, whatever
  priorities the processor serves.

The operator writes the blob *before* broadcasting, so a worker woken by the broadcast
and re-reading the blob never sees the old state. No blob means released: a deployment
that never uses the gate never waits. Provisioning writes it released (create-only), and a
worker that finds none creates it so, so that its reads do not answer 404 by design.

The flag also keeps when the gate was held (:class:`GateHistory`: the last
:data:`KEPT_HOLDS` spells), so that a batch's status can report the time it waited for a
release apart from the time it was processed.
"""

from __future__ import annotations

import contextlib
import json
import logging
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

from azure.core.exceptions import ResourceExistsError, ResourceNotFoundError

from shared.bus.ports import TriggerBus
from shared.contracts.messages import KIND_PROPERTY, GateEvent
from shared.coordination.work_signal import signal_work
from shared.storage.ports import Blob, BlobContainer

GATE_BLOB = "gate/state.json"
#: What a gate broadcast carries, and what a processor subscription's gate rule matches.
GATE_PROPERTIES: dict[str, str] = {KIND_PROPERTY: "gate"}

#: Held spells the flag remembers (a hold and a release take a few hundred bytes).
KEPT_HOLDS = 100

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class GateHistory:
    """The gate now, and the spells it was held: ``(held at, released at or None)``."""

    released: bool
    holds: tuple[tuple[datetime, datetime | None], ...] = ()

    def held_seconds(self, start: datetime, end: datetime) -> float:
        """Seconds between ``start`` and ``end`` during which the gate was held."""
        total = 0.0
        for held_at, released_at in self.holds:
            overlap = (min(released_at or end, end) - max(held_at, start)).total_seconds()
            total += max(overlap, 0.0)
        return total


def read_gate(control: BlobContainer) -> bool:
    """Whether the gate is released (True when no operator ever set it)."""
    try:
        blob = control.get(GATE_BLOB)
    except ResourceNotFoundError:
        return True
    return _parse(control, blob)


def _parse(control: BlobContainer, blob: Blob) -> bool:
    try:
        return bool(json.loads(blob.data)["released"])
    except (ValueError, KeyError, TypeError) as exc:
        raise ValueError(
            f"gate blob {control.name}/{GATE_BLOB} is corrupt: {blob.data[:200]!r}"
        ) from exc


def read_gate_history(control: BlobContainer) -> GateHistory:
    """The gate and its held spells (released with none when no operator ever set it)."""
    try:
        blob = control.get(GATE_BLOB)
    except ResourceNotFoundError:
        return GateHistory(released=True)
    return GateHistory(released=_parse(control, blob), holds=_holds(blob.data))


def _holds(data: bytes) -> tuple[tuple[datetime, datetime | None], ...]:
    try:
        spells = json.loads(data).get("holds", [])
        return tuple(
            (datetime.fromisoformat(held), None if ended is None else datetime.fromisoformat(ended))
            for held, ended in spells
        )
    except (ValueError, TypeError, AttributeError):  # a flag written without them
        return ()


def _state(released: bool, holds: Sequence[tuple[datetime, datetime | None]] = ()) -> bytes:
    spells = [
        [held.isoformat(), None if ended is None else ended.isoformat()] for held, ended in holds
    ]
    document = {"released": released, "at": datetime.now(UTC).isoformat(), "holds": spells}
    return json.dumps(document).encode()


def _next_holds(
    control: BlobContainer, *, released: bool
) -> list[tuple[datetime, datetime | None]]:
    """The held spells once the gate is set: a hold opens a spell, a release closes it."""
    previous = read_gate_history(control)
    holds = list(previous.holds)
    now = datetime.now(UTC)
    open_spell = bool(holds) and holds[-1][1] is None
    if released and open_spell:
        holds[-1] = (holds[-1][0], now)
    elif not released and not open_spell:
        holds.append((now, None))
    return holds[-KEPT_HOLDS:]


def ensure_gate(control: BlobContainer) -> None:
    """Write the gate released if no operator ever set it (never overwrites a set one)."""
    with contextlib.suppress(ResourceExistsError):
        control.put(GATE_BLOB, _state(True), create_only=True)


def set_gate(control: BlobContainer, bus: TriggerBus | None, *, released: bool) -> None:
    """Open or close the gate: write the durable flag, then broadcast the change, once:
    each processor subscription has a rule for the gate besides its priority rules. The
    work signal moves in between, so that idle workers whose broadcast is lost re-read the
    flag on their next safety tick."""
    try:
        holds = _next_holds(control, released=released)
    except ValueError:  # a corrupt flag is overwritten, its history with it
        holds = [] if released else [(datetime.now(UTC), None)]
    control.put(GATE_BLOB, _state(released, holds))
    signal_work(control, "gate")
    if bus is not None:
        body = GateEvent(released=released).to_text().encode()
        bus.publish(body, dict(GATE_PROPERTIES))
    log.info("gate %s", "released" if released else "held")


class GateWatcher:
    """A worker's view of the gate: blocks while held, wakes on a broadcast or a re-read."""

    def __init__(self, control: BlobContainer) -> None:
        self._control = control
        self._released = threading.Event()
        self.refresh()

    @property
    def released(self) -> bool:
        return self._released.is_set()

    def refresh(self) -> bool:
        """Re-read the durable flag (at start and whenever the work signal moved); a
        missing flag is written released first, so later reads find it."""
        try:
            released = _parse(self._control, self._control.get(GATE_BLOB))
        except ResourceNotFoundError:  # at most once per deployment
            ensure_gate(self._control)
            released = read_gate(self._control)
        self._apply(released)
        return self.released

    def on_event(self, event: GateEvent) -> None:
        """A broadcast arrived: apply it at once."""
        self._apply(event.released)

    def wait_released(self, timeout: float | None = None) -> bool:
        return self._released.wait(timeout)

    def _apply(self, released: bool) -> None:
        if released == self._released.is_set():
            return
        if released:
            self._released.set()
        else:
            self._released.clear()
        log.info("gate is now %s", "released" if released else "held")

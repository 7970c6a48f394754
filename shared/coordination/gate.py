"""The release gate (docs/patterns.md).

Pre-started workers wait until an operator releases them. Two mechanisms, combined:

* a **blob flag** (``gate/state.json`` in the control container) is the durable truth: a
  worker reads it when it starts and again on every slow poll, so a worker started after
  the release proceeds at once, and a lost broadcast costs at most one poll interval;
* a **broadcast** on the trigger topic (:class:`~shared.contracts.messages.GateEvent`, with the
  application properties :data:`GATE_PROPERTIES`) makes a release instant for workers
  already waiting: every processor subscription has a rule that selects it, whatever
  priorities the processor serves.

The operator writes the blob *before* broadcasting, so a worker woken by the broadcast
and re-reading the blob never sees the old state. No blob means released: a deployment
that never uses the gate never waits.
"""

from __future__ import annotations

import json
import logging
import threading
from datetime import UTC, datetime

from azure.core.exceptions import ResourceNotFoundError

from shared.bus.ports import TriggerBus
from shared.contracts.messages import KIND_PROPERTY, GateEvent
from shared.storage.ports import BlobContainer

GATE_BLOB = "gate/state.json"
#: What a gate broadcast carries, and what a processor subscription's gate rule matches.
GATE_PROPERTIES: dict[str, str] = {KIND_PROPERTY: "gate"}

log = logging.getLogger(__name__)


def read_gate(control: BlobContainer) -> bool:
    """Whether the gate is released (True when no operator ever set it)."""
    try:
        blob = control.get(GATE_BLOB)
    except ResourceNotFoundError:
        return True
    try:
        return bool(json.loads(blob.data)["released"])
    except (ValueError, KeyError, TypeError) as exc:
        raise ValueError(
            f"gate blob {control.name}/{GATE_BLOB} is corrupt: {blob.data[:200]!r}"
        ) from exc


def set_gate(control: BlobContainer, bus: TriggerBus | None, *, released: bool) -> None:
    """Open or close the gate: write the durable flag, then broadcast the change, once:
    each processor subscription has a rule for the gate besides its priority rules."""
    state = {"released": released, "at": datetime.now(UTC).isoformat()}
    control.put(GATE_BLOB, json.dumps(state).encode())
    if bus is not None:
        body = GateEvent(released=released).to_text().encode()
        bus.publish(body, dict(GATE_PROPERTIES))
    log.info("gate %s", "released" if released else "held")


class GateWatcher:
    """A worker's view of the gate: blocks while held, wakes on a broadcast or a poll."""

    def __init__(self, control: BlobContainer) -> None:
        self._control = control
        self._released = threading.Event()
        self.refresh()

    @property
    def released(self) -> bool:
        return self._released.is_set()

    def refresh(self) -> bool:
        """Re-read the durable flag (at start and on every slow poll)."""
        self._apply(read_gate(self._control))
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

"""The release gate in a processor (docs/patterns.md).

A processor may start **held**: its listener starts no dequeue thread until the gate opens.
Two paths open (or close) it, as :mod:`shared.coordination.gate` explains: the broadcast on the
trigger topic (instant, through :meth:`GateKeeper.on_event`) and the durable blob flag, read
at start and re-read through :meth:`GateKeeper.refresh` whenever the work signal moved
(:mod:`processor.control_watch`): a lost broadcast costs at most one safety tick.

Whichever path notices a change, :meth:`GateKeeper.sync` brings the listener in line:

* released, never started → ``listener.start()`` (threads as the queue depth deserves);
* released, paused → ``listener.resume()``;
* held, running → ``listener.pause()``: no new receive, in-flight messages finish.
"""

from __future__ import annotations

import logging
import threading
from typing import Protocol

from shared.contracts.messages import GateEvent
from shared.coordination.gate import GateWatcher
from shared.storage.ports import BlobContainer
from shared.storage.transient import retry_transient

log = logging.getLogger(__name__)


class GatedListener(Protocol):
    """What the gate drives: :class:`~shared.listener.QueueListener` fits."""

    def start(self) -> None: ...

    def pause(self) -> None: ...

    def resume(self) -> None: ...


class GateKeeper:
    """Keeps a listener held or running as the gate says."""

    def __init__(
        self,
        control: BlobContainer,
        listener: GatedListener,
        *,
        start_retry_pause: float = 0.4,
    ) -> None:
        self._control = control
        self._listener = listener
        self._start_retry_pause = start_retry_pause
        self._lock = threading.Lock()
        self._watcher: GateWatcher | None = None
        self._listener_started = False
        self._stopping = threading.Event()

    @property
    def released(self) -> bool:
        return self._watcher is not None and self._watcher.released

    def start(self) -> None:
        """Read the durable flag and act on it. A read that fails transiently is tried
        again; one that keeps failing raises (the processor cannot tell held from
        released)."""
        self._watcher = retry_transient(
            lambda: GateWatcher(self._control),
            what="reading the gate",
            pause=self._start_retry_pause,
        )
        if not self._watcher.released:
            log.info("gate is held: waiting for 'billing release'")
        self.sync()

    def on_event(self, event: GateEvent) -> None:
        """A broadcast: apply it at once. Ignored before :meth:`start`, whose read of the
        flag comes later and is authoritative (the flag is written before the broadcast)."""
        if self._watcher is None:
            return
        self._watcher.on_event(event)
        self.sync()

    def refresh(self) -> None:
        """Re-read the durable flag; a failed read keeps the current state."""
        if self._watcher is None:
            return
        try:
            self._watcher.refresh()
        except Exception:
            log.warning("could not read the gate flag; keeping the current state", exc_info=True)
            return
        self.sync()

    def sync(self) -> None:
        """Start, resume or pause the listener to match the gate."""
        with self._lock:
            if self._stopping.is_set() or self._watcher is None:
                return
            if not self._watcher.released:
                if self._listener_started:
                    self._listener.pause()
                return
            if self._listener_started:
                self._listener.resume()
                return
            self._listener_started = True
            self._listener.start()

    def stop(self) -> None:
        """Stop acting on the gate (the caller stops the listener)."""
        with self._lock:
            self._stopping.set()

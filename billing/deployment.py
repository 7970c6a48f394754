"""One way to assemble a deployment in this process: connections, resources, then the roles.

    with Deployment(settings) as deployment:          # storage and bus opened, provisioned
        deployment.start(deployment.controller())     # each role is a shared.lifecycle.Role
        deployment.start(deployment.processor())
        deployment.start(deployment.initiator(port=8000), front=True)
        ...
    # stopped (the front first, then the workers together) and closed

All-in-one mode, the processes of ``billing processor`` and ``billing controller``, the
end-to-end tests, the processor tests and the benchmarks assemble their deployments here.
``own_connections=True`` gives each role its own storage and bus handles, as separate
processes would have; otherwise every role shares the deployment's. A role's code is
imported when the role is made, so a processor process never loads the initiator's web
stack or the controller's warehouse.
"""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack
from typing import TYPE_CHECKING, Any, TypeVar

from shared.bus import open_bus
from shared.bus.ports import TriggerBus
from shared.closing import Closing
from shared.lifecycle import Role, time_left
from shared.provision import ensure_resources
from shared.settings import Settings
from shared.storage import open_storage
from shared.storage.ports import StorageAccount

if TYPE_CHECKING:
    from controller.worker import ControllerWorker
    from initiator.server import InitiatorServer
    from processor.worker import ProcessorWorker

R = TypeVar("R", bound=Role)
C = TypeVar("C", StorageAccount, TriggerBus)


class Deployment(Closing):
    """``settings``' storage and bus (or ``bus``), provisioned, and the roles started on them.

    It stops what it started and closes what it opened, whatever happens in between.
    """

    def __init__(
        self,
        settings: Settings,
        *,
        bus: TriggerBus | None = None,
        own_connections: bool = False,
        provision: bool = True,
    ) -> None:
        self.settings = settings
        self._own_connections = own_connections
        self._resources = ExitStack()
        self._front: list[Role] = []
        self._workers: list[Role] = []
        try:
            self.storage: StorageAccount = self._close_later(open_storage(settings))
            self.bus: TriggerBus = self._close_later(bus if bus is not None else open_bus(settings))
            if provision:
                ensure_resources(settings, self.storage, self.bus)
        except BaseException:
            self._resources.close()
            raise

    # --- the roles ------------------------------------------------------------------------
    def connections(self) -> tuple[StorageAccount, TriggerBus]:
        """Storage and bus for one more role: the deployment's, or handles of its own."""
        if not self._own_connections:
            return self.storage, self.bus
        return self._close_later(open_storage(self.settings)), self._close_later(
            open_bus(self.settings)
        )

    def processor(self, **options: Any) -> ProcessorWorker:
        """A processor (not started); ``options`` as :class:`ProcessorWorker` takes them."""
        from processor.worker import ProcessorWorker  # each role imports only its own code

        storage, bus = self.connections()
        return ProcessorWorker(self.settings, storage, bus, **options)

    def controller(self, *, trigger: bool = True, **options: Any) -> ControllerWorker:
        """A controller (not started); ``trigger``: wake on accepted batches."""
        from controller.worker import ControllerWorker

        storage, bus = self.connections()
        return ControllerWorker(self.settings, storage, bus=bus if trigger else None, **options)

    def initiator(
        self, *, host: str = "127.0.0.1", port: int, grace_seconds: int = 1, log_level: str = "info"
    ) -> InitiatorServer:
        """The HTTP API (not started). With shared connections the app uses the deployment's;
        with its own, the app opens them at start-up, as ``billing initiator`` does."""
        from initiator.app import create_app
        from initiator.server import InitiatorServer

        connections = None if self._own_connections else (self.storage, self.bus)
        return InitiatorServer(
            create_app(self.settings, connections=connections),
            self.settings,
            host=host,
            port=port,
            grace_seconds=grace_seconds,
            log_level=log_level,
        )

    def start(self, role: R, *, front: bool = False) -> R:
        """Start ``role``; a ``front`` role (one that takes new work in) is stopped first."""
        role.start()
        (self._front if front else self._workers).append(role)
        return role

    # --- stopping -------------------------------------------------------------------------
    def stop(self, timeout: float = 5.0) -> bool:
        """Stop the front roles, then every worker at once (each may use what is left of
        ``timeout`` to finish its in-flight messages). ``True`` if all stopped cleanly."""
        deadline = time.monotonic() + timeout
        front, self._front = self._front[::-1], []
        results = [role.stop(time_left(deadline)) for role in front]  # every one, in order
        workers, self._workers = self._workers[::-1], []
        if workers:
            with ThreadPoolExecutor(len(workers), thread_name_prefix="stop") as pool:
                results += pool.map(lambda role: role.stop(time_left(deadline)), workers)
        return all(results)

    def close(self) -> None:
        """Stop every role still running, then close every connection."""
        try:
            self.stop()
        finally:
            self._resources.close()

    def _close_later(self, connection: C) -> C:
        self._resources.callback(connection.close)
        return connection

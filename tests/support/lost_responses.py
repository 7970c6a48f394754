"""Chosen table writes whose response is lost after storage applied them, on any backend.

A deterministic fault for one scenario at a time ("the response to the write that sets
``status=accepted`` never arrives"); it wraps the storage port, so the write really lands,
in the embedded backend or in Azurite, before the caller sees the error a reset connection
gives through the SDK (:class:`~azure.core.exceptions.ServiceResponseError`).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from azure.core.exceptions import ServiceRequestError, ServiceResponseError

from shared.storage.ports import Entity, StorageAccount, Table


@dataclass
class LostResponses:
    """What to break. Each status in ``updates_to`` breaks once; reads break while set."""

    updates_to: set[str] = field(default_factory=set)
    """Lose the response of the next update that writes one of these ``status`` values."""
    reads_fail_after_loss: bool = False
    """After the first lost response, every table read fails too (storage went away)."""
    lost: list[str] = field(default_factory=list)
    """The statuses whose response was lost, in order."""

    def wrap(self, storage: StorageAccount) -> StorageAccount:
        return _Account(storage, self)


class _Account:
    def __init__(self, inner: StorageAccount, faults: LostResponses) -> None:
        self._inner = inner
        self._faults = faults

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    def table(self, name: str) -> Table:
        return _Table(self._inner.table(name), self._faults)  # type: ignore[return-value]


class _Table:
    def __init__(self, inner: Table, faults: LostResponses) -> None:
        self._inner = inner
        self._faults = faults

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    def update(self, entity: Entity, *, if_match: str, merge: bool = True) -> Entity:
        updated = self._inner.update(entity, if_match=if_match, merge=merge)
        status = str(entity.properties.get("status"))
        if status in self._faults.updates_to:
            self._faults.updates_to.discard(status)
            self._faults.lost.append(status)
            raise ServiceResponseError(f"injected: response to the '{status}' write lost")
        return updated

    def get(self, partition_key: str, row_key: str) -> Entity:
        self._check_reads()
        return self._inner.get(partition_key, row_key)

    def query(self, partition_key: str | None = None, **equals: Any) -> Iterator[Entity]:
        self._check_reads()
        return self._inner.query(partition_key, **equals)

    def _check_reads(self) -> None:
        if self._faults.reads_fail_after_loss and self._faults.lost:
            raise ServiceRequestError("injected: storage unreachable")

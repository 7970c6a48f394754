"""A table through azure-data-tables: entities with optimistic concurrency on their ETag."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import suppress
from datetime import UTC, datetime
from typing import Any

from azure.core import MatchConditions
from azure.core.exceptions import ResourceExistsError
from azure.data.tables import EdmType, EntityProperty, TableClient, TableEntity, UpdateMode

from shared.storage.ports import Entity

_INT32_MIN, _INT32_MAX = -(2**31), 2**31 - 1


class AzureTable:
    """One table of a storage account; see :class:`shared.storage.ports.Table`."""

    def __init__(self, client: TableClient) -> None:
        self._client = client

    @property
    def name(self) -> str:
        return self._client.table_name

    def create(self) -> None:
        with suppress(ResourceExistsError):
            self._client.create_table()

    def insert(self, entity: Entity) -> Entity:
        result = self._client.create_entity(_to_sdk(entity))
        return _with_etag(entity, result)

    def upsert(self, entity: Entity) -> Entity:
        result = self._client.upsert_entity(_to_sdk(entity), mode=UpdateMode.REPLACE)
        return _with_etag(entity, result)

    def update(self, entity: Entity, *, if_match: str, merge: bool = True) -> Entity:
        result = self._client.update_entity(
            _to_sdk(entity),
            mode=UpdateMode.MERGE if merge else UpdateMode.REPLACE,
            etag=if_match,
            match_condition=MatchConditions.IfNotModified,
        )
        return _with_etag(entity, result)

    def get(self, partition_key: str, row_key: str) -> Entity:
        return _to_port(self._client.get_entity(partition_key, row_key))

    def query(self, partition_key: str | None = None, **equals: Any) -> Iterator[Entity]:
        query_filter = equality_filter(partition_key, equals)
        pager = (
            self._client.query_entities(query_filter)
            if query_filter
            else self._client.list_entities()
        )
        for entity in pager:
            yield _to_port(entity)

    def delete(self, partition_key: str, row_key: str, *, if_match: str | None = None) -> None:
        # The SDK already treats a missing entity as deleted.
        if if_match is None:
            self._client.delete_entity(partition_key, row_key)
        else:
            self._client.delete_entity(
                partition_key, row_key, etag=if_match, match_condition=MatchConditions.IfNotModified
            )


def equality_filter(partition_key: str | None, equals: Mapping[str, Any]) -> str:
    """An OData filter: ``PartitionKey eq 'p' and status eq 'open' and tries eq 1``.

    We write the literals ourselves rather than through the SDK's ``parameters``, whose
    substitution tests ``value in [True, False]`` and so turns the integers 0 and 1 into
    ``false`` and ``true``.
    """
    clauses = [] if partition_key is None else [f"PartitionKey eq {odata_literal(partition_key)}"]
    for name, value in equals.items():
        if not name.isidentifier():
            raise ValueError(f"not a property name: {name!r}")
        clauses.append(f"{name} eq {odata_literal(value)}")
    return " and ".join(clauses)


def odata_literal(value: Any) -> str:
    """The OData literal of a Python value of one of the port's property types."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value) if _INT32_MIN <= value <= _INT32_MAX else f"{value}L"
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, str):
        return "'" + value.replace("'", "''") + "'"
    if isinstance(value, datetime):
        # A naive datetime is local time, as the SDK takes it when it writes an entity.
        utc = value.astimezone(UTC)
        return f"datetime'{utc.strftime('%Y-%m-%dT%H:%M:%S.%fZ')}'"
    if isinstance(value, bytes):
        return f"X'{value.hex()}'"
    raise TypeError(f"no OData literal for {type(value).__name__}")


def _to_sdk(entity: Entity) -> dict[str, Any]:
    properties = {name: _to_sdk_value(value) for name, value in entity.properties.items()}
    return {"PartitionKey": entity.partition_key, "RowKey": entity.row_key, **properties}


def _to_sdk_value(value: Any) -> Any:
    """The SDK refuses a plain int beyond 32 bits: such a one travels as ``Edm.Int64``."""
    is_int = isinstance(value, int) and not isinstance(value, bool)
    if is_int and not _INT32_MIN <= value <= _INT32_MAX:
        return EntityProperty(value, EdmType.INT64)
    return value


def _to_port(entity: TableEntity) -> Entity:
    properties = {
        name: value.value if isinstance(value, EntityProperty) else value
        for name, value in entity.items()
        if name not in ("PartitionKey", "RowKey")
    }
    return Entity(
        partition_key=entity["PartitionKey"],
        row_key=entity["RowKey"],
        properties=properties,
        etag=entity.metadata["etag"] or "",
    )


def _with_etag(entity: Entity, result: Mapping[str, Any]) -> Entity:
    return Entity(
        partition_key=entity.partition_key,
        row_key=entity.row_key,
        properties=entity.properties,
        etag=result["etag"],
    )

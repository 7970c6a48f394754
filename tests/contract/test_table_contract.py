"""The table contract: entities, property types, optimistic concurrency, equality queries."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from azure.core.exceptions import ResourceExistsError, ResourceModifiedError, ResourceNotFoundError

from shared.storage.ports import Entity, StorageAccount, Table
from tests.support.names import unique_name

PROPERTIES = {
    "status": "open",
    "tries": 1,
    "big": 2**40,
    "ratio": 1.5,
    "done": False,
    "raw": b"\x00\x01\xff",
    "at": datetime(2024, 1, 2, 3, 4, 5, 678000, tzinfo=UTC),
}


def test_insert_then_get_round_trips_every_property_type(table: Table) -> None:
    inserted = table.insert(Entity("batch-1", "chunk-0", PROPERTIES))

    fetched = table.get("batch-1", "chunk-0")

    assert (fetched.partition_key, fetched.row_key) == ("batch-1", "chunk-0")
    assert dict(fetched.properties) == PROPERTIES
    assert fetched.etag == inserted.etag != ""


def test_insert_twice_raises_resource_exists(table: Table) -> None:
    table.insert(Entity("p", "r", {"v": 1}))

    with pytest.raises(ResourceExistsError):
        table.insert(Entity("p", "r", {"v": 2}))
    assert table.get("p", "r").properties["v"] == 1


def test_a_missing_entity_is_not_found(table: Table) -> None:
    with pytest.raises(ResourceNotFoundError):
        table.get("p", "missing")


def test_update_with_the_current_etag_merges_and_moves_the_etag(table: Table) -> None:
    inserted = table.insert(Entity("p", "r", {"status": "open", "tries": 1}))

    updated = table.update(Entity("p", "r", {"status": "done"}), if_match=inserted.etag)

    assert updated.etag != inserted.etag
    fetched = table.get("p", "r")
    assert dict(fetched.properties) == {"status": "done", "tries": 1}
    assert fetched.etag == updated.etag


def test_update_without_merge_replaces_the_properties(table: Table) -> None:
    inserted = table.insert(Entity("p", "r", {"status": "open", "tries": 1}))

    table.update(Entity("p", "r", {"status": "done"}), if_match=inserted.etag, merge=False)

    assert dict(table.get("p", "r").properties) == {"status": "done"}


def test_update_with_a_stale_etag_raises_resource_modified(table: Table) -> None:
    stale = table.insert(Entity("p", "r", {"tries": 1}))
    table.update(Entity("p", "r", {"tries": 2}), if_match=stale.etag)

    with pytest.raises(ResourceModifiedError):
        table.update(Entity("p", "r", {"tries": 3}), if_match=stale.etag)
    assert table.get("p", "r").properties["tries"] == 2


def test_update_of_a_deleted_entity_is_not_found(table: Table) -> None:
    stale = table.insert(Entity("p", "r", {"tries": 1}))
    table.delete("p", "r")

    with pytest.raises(ResourceNotFoundError):
        table.update(Entity("p", "r", {"tries": 2}), if_match=stale.etag)


def test_upsert_inserts_or_replaces_unconditionally(table: Table) -> None:
    first = table.upsert(Entity("p", "r", {"a": 1, "b": 2}))
    second = table.upsert(Entity("p", "r", {"a": 3}))

    assert second.etag != first.etag
    assert dict(table.get("p", "r").properties) == {"a": 3}


def test_query_filters_by_partition_and_property_equality(table: Table) -> None:
    rows = [
        ("b1", "0", "open", 0),
        ("b1", "1", "done", 1),
        ("b1", "2", "open", 1),
        ("b2", "0", "open", 1),
    ]
    for partition, row, status, tries in rows:
        table.insert(Entity(partition, row, {"status": status, "tries": tries}))

    def keys(entities: list[Entity]) -> list[tuple[str, str]]:
        return sorted((e.partition_key, e.row_key) for e in entities)

    assert keys(list(table.query("b1"))) == [("b1", "0"), ("b1", "1"), ("b1", "2")]
    assert keys(list(table.query("b1", status="open"))) == [("b1", "0"), ("b1", "2")]
    # 0 and 1 stay integers (not false/true) and several conditions combine with "and".
    assert keys(list(table.query("b1", status="open", tries=1))) == [("b1", "2")]
    assert keys(list(table.query(tries=0))) == [("b1", "0")]
    assert keys(list(table.query(status="open"))) == [("b1", "0"), ("b1", "2"), ("b2", "0")]
    assert len(list(table.query())) == 4
    assert list(table.query("b1", status="it's")) == []  # a quote is data, not syntax


def test_query_returns_entities_with_their_etags(table: Table) -> None:
    inserted = table.insert(Entity("p", "r", {"v": 1}))

    [queried] = table.query("p", v=1)

    assert queried.etag == inserted.etag
    assert dict(queried.properties) == {"v": 1}


def test_delete_with_a_stale_etag_raises_resource_modified_then_deletes(table: Table) -> None:
    stale = table.insert(Entity("p", "r", {"v": 1}))
    current = table.update(Entity("p", "r", {"v": 2}), if_match=stale.etag)

    with pytest.raises(ResourceModifiedError):
        table.delete("p", "r", if_match=stale.etag)
    table.delete("p", "r", if_match=current.etag)

    with pytest.raises(ResourceNotFoundError):
        table.get("p", "r")
    table.delete("p", "r")  # absent is not an error


def test_a_missing_table_is_not_found(storage: StorageAccount) -> None:
    missing = storage.table(unique_name("t"))

    with pytest.raises(ResourceNotFoundError):
        missing.insert(Entity("p", "r"))
    with pytest.raises(ResourceNotFoundError):
        missing.get("p", "r")


@pytest.mark.parametrize("name", sorted(PROPERTIES))
def test_query_matches_on_a_property_of_each_type(table: Table, name: str) -> None:
    table.insert(Entity("p", "match", PROPERTIES))
    table.insert(
        Entity(
            "p",
            "other",
            {
                "status": "x",
                "tries": 2,
                "big": 2**41,
                "ratio": 2.5,
                "done": True,
                "raw": b"\x02",
                "at": datetime.now(UTC),
            },
        )
    )

    assert [e.row_key for e in table.query("p", **{name: PROPERTIES[name]})] == ["match"]

"""Embedded tables: typed properties, Azure's filter equality, limits and paging."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest
from azure.core.exceptions import HttpResponseError, ResourceNotFoundError

from shared import meter
from shared.storage.embedded import EmbeddedStorageAccount
from shared.storage.embedded import table as table_module
from shared.storage.embedded.table import EmbeddedTable
from shared.storage.ports import Entity


@pytest.fixture
def table(account: EmbeddedStorageAccount) -> EmbeddedTable:
    created = account.table("Chunks")
    created.create()
    return created


def test_values_read_back_with_their_type(table: EmbeddedTable) -> None:
    aware = datetime(2024, 5, 1, 12, 30, 15, 123456, tzinfo=timezone(timedelta(hours=2)))
    table.insert(
        Entity(
            "p",
            "r",
            {
                "big": 2**62,
                "negative": -(2**63),
                "ratio": 0.1,
                "flag": False,
                "raw": bytes(range(256)),
                "when": aware,
                "text": "ünïcode",
            },
        )
    )

    got = table.get("p", "r").properties
    assert got["big"] == 2**62
    assert type(got["big"]) is int
    assert got["negative"] == -(2**63)
    assert got["ratio"] == 0.1
    assert type(got["ratio"]) is float
    assert got["flag"] is False
    assert got["raw"] == bytes(range(256))
    assert got["when"] == aware
    assert got["when"].tzinfo == UTC  # stored in UTC, as Azure does
    assert got["text"] == "ünïcode"


def test_none_values_are_not_stored(table: EmbeddedTable) -> None:
    table.upsert(Entity("p", "r", {"kept": 1, "dropped": None}))
    assert table.get("p", "r").properties == {"kept": 1}


@pytest.mark.parametrize("value", [2**63, -(2**63) - 1, [1], {"a": 1}, 1 + 2j])
def test_values_azure_cannot_hold_are_a_type_error(table: EmbeddedTable, value: object) -> None:
    with pytest.raises(TypeError):
        table.upsert(Entity("p", "r", {"v": value}))


@pytest.mark.parametrize("key", ["a/b", "a\\b", "a#b", "a?b", "tab\t", "x" * 1025])
def test_keys_azure_refuses_are_a_bad_request(table: EmbeddedTable, key: str) -> None:
    with pytest.raises(HttpResponseError):
        table.insert(Entity(key, "r"))
    with pytest.raises(HttpResponseError):
        table.insert(Entity("p", key))


@pytest.mark.parametrize("name", ["PartitionKey", "RowKey", "Timestamp", "has space", "1st"])
def test_reserved_or_invalid_property_names_are_refused(table: EmbeddedTable, name: str) -> None:
    with pytest.raises(HttpResponseError):
        table.upsert(Entity("p", "r", {name: 1}))


def test_oversized_values_are_refused(table: EmbeddedTable) -> None:
    with pytest.raises(HttpResponseError, match="PropertyValueTooLarge"):
        table.upsert(Entity("p", "r", {"s": "x" * 32769}))  # 64 KiB + 2 in UTF-16
    with pytest.raises(HttpResponseError, match="PropertyValueTooLarge"):
        table.upsert(Entity("p", "r", {"b": b"x" * (64 * 1024 + 1)}))
    table.upsert(Entity("p", "r", {"s": "x" * 32768, "b": b"x" * 64 * 1024}))


def test_filters_compare_types_like_azure(table: EmbeddedTable) -> None:
    """Numbers compare across int and float; str, bool and numbers never equal each other."""
    table.upsert(Entity("p", "int", {"v": 1}))
    table.upsert(Entity("p", "float", {"v": 1.0}))
    table.upsert(Entity("p", "bool", {"v": True}))
    table.upsert(Entity("p", "str", {"v": "1"}))
    table.upsert(Entity("p", "none", {"other": 1}))

    def keys(value: object) -> list[str]:
        return [e.row_key for e in table.query("p", v=value)]

    assert keys(1) == ["float", "int"]
    assert keys(1.0) == ["float", "int"]
    assert keys(True) == ["bool"]
    assert keys("1") == ["str"]


def test_query_filters_on_row_key_and_datetimes(table: EmbeddedTable) -> None:
    when = datetime(2024, 1, 1, tzinfo=UTC)
    table.upsert(Entity("p", "a", {"at": when}))
    table.upsert(Entity("p", "b", {"at": when}))

    assert [e.row_key for e in table.query("p", RowKey="b")] == ["b"]
    same_instant = when.astimezone(timezone(timedelta(hours=-5)))
    assert [e.row_key for e in table.query("p", at=same_instant)] == ["a", "b"]


def test_query_without_partition_sorts_by_partition_then_row(table: EmbeddedTable) -> None:
    for pk, rk in [("b", "1"), ("a", "2"), ("a", "10"), ("c", "0")]:
        table.upsert(Entity(pk, rk))
    assert [(e.partition_key, e.row_key) for e in table.query()] == [
        ("a", "10"),
        ("a", "2"),
        ("b", "1"),
        ("c", "0"),
    ]


def test_query_pages_like_azure_and_counts_each_page(
    table: EmbeddedTable, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(table_module, "QUERY_PAGE_SIZE", 2)
    for n in range(5):
        table.upsert(Entity("p", f"{n}", {"even": n % 2 == 0}))

    before = meter.snapshot()
    assert [e.row_key for e in table.query("p", even=True)] == ["0", "2", "4"]
    assert meter.diff(meter.snapshot(), before) == {"table.read": 3}


def test_table_names_are_case_insensitive_and_keep_their_case(
    account: EmbeddedStorageAccount, table: EmbeddedTable
) -> None:
    account.table("CHUNKS").create()  # the same table: nothing new
    account.table("chunks").upsert(Entity("p", "r", {"v": 1}))

    assert account.list_tables() == ["Chunks"]
    assert table.get("p", "r").properties == {"v": 1}


def test_a_table_never_created_is_not_found(account: EmbeddedStorageAccount) -> None:
    missing = account.table("Missing")
    with pytest.raises(ResourceNotFoundError, match="TableNotFound"):
        missing.insert(Entity("p", "r"))
    with pytest.raises(ResourceNotFoundError, match="TableNotFound"):
        missing.get("p", "r")
    with pytest.raises(ResourceNotFoundError, match="TableNotFound"):
        list(missing.query("p"))
    missing.delete("p", "r")  # cleanup of what is not there is not an error


def test_update_with_the_wildcard_needs_the_entity_to_exist(table: EmbeddedTable) -> None:
    with pytest.raises(ResourceNotFoundError):
        table.update(Entity("p", "r", {"v": 1}), if_match="*")
    table.insert(Entity("p", "r", {"v": 1, "w": 2}))

    table.update(Entity("p", "r", {"v": 3}), if_match="*")
    assert table.get("p", "r").properties == {"v": 3, "w": 2}

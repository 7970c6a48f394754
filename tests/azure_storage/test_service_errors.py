"""Service answers the backend translates into the port's exceptions, and OData literals."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from shared.storage import queue_rules
from shared.storage.azure import AzureStorageAccount
from shared.storage.azure.blob import quoted_etag
from shared.storage.azure.table import equality_filter, odata_literal
from shared.storage.ports import MAX_QUEUE_MESSAGE_BYTES, MessageTooLargeError
from tests.contract.conftest import azurite_settings
from tests.support.azurite import AzuriteInfo
from tests.support.names import unique_name


@pytest.mark.azurite
def test_the_service_refusing_a_large_message_raises_message_too_large(
    azurite: AzuriteInfo, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Switch our own check off so the request reaches the service and its 413 comes back.
    monkeypatch.setattr(queue_rules, "MAX_QUEUE_MESSAGE_BYTES", 10 * MAX_QUEUE_MESSAGE_BYTES)
    with AzureStorageAccount.from_settings(azurite_settings(azurite)) as account:
        queue = account.queue(unique_name("q"))
        queue.create()
        try:
            with pytest.raises(MessageTooLargeError, match="RequestBodyTooLarge"):
                queue.send("x" * (MAX_QUEUE_MESSAGE_BYTES + 1))
            assert queue.approximate_count() == 0
        finally:
            queue.delete_queue()


@pytest.mark.parametrize(
    ("value", "literal"),
    [
        (True, "true"),
        (False, "false"),
        (0, "0"),
        (1, "1"),
        (2**31 - 1, "2147483647"),
        (2**31, "2147483648L"),
        (1.5, "1.5"),
        ("it's", "'it''s'"),
        (b"\x00\xff", "X'00ff'"),
        (datetime(2024, 1, 2, 3, 4, 5, tzinfo=UTC), "datetime'2024-01-02T03:04:05.000000Z'"),
    ],
)
def test_odata_literals(value: object, literal: str) -> None:
    assert odata_literal(value) == literal


def test_equality_filter_joins_conditions_and_refuses_odd_property_names() -> None:
    assert equality_filter("b1", {"tries": 1}) == "PartitionKey eq 'b1' and tries eq 1"
    assert equality_filter(None, {}) == ""
    with pytest.raises(ValueError, match="property name"):
        equality_filter(None, {"x eq 1 or y": 1})


def test_etags_are_spelled_with_quotes_whatever_the_source() -> None:
    assert quoted_etag("0x8D1") == '"0x8D1"'
    assert quoted_etag('"0x8D1"') == '"0x8D1"'

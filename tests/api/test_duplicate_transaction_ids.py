"""With ``BILLING_DUPLICATE_TRANSACTION_IDS``, a batch repeating a billed transaction id is
refused, not billed twice.

A batch holding a transaction id accepted in another live batch within the duplicate-body
window answers 409 naming that batch and leaves no trace; ``?allow_duplicate=true`` says it
is to be billed again. Batches that are gone, abandoned or older than the window refuse
nothing, and their index blobs are deleted. Both reading paths (the helpers' segments and
the serial reader) feed the check.
"""

from __future__ import annotations

import logging
from datetime import timedelta

import httpx
import pytest

from initiator.dependencies import Services
from initiator.id_window import DuplicateTransactionIdsError
from initiator.id_window.index import PREFIX, index_name
from initiator.publishing import sweep_orphans
from shared.contracts.batch_records import BATCH_PARTITION, utc_now
from shared.contracts.batch_status import BatchStatus
from shared.settings import Settings
from tests.api.batch_files import csv_file, row, rows
from tests.api.conftest import ServicesFactory, SettingsFactory
from tests.api.harness import CSV, Api, started_api
from tests.api.test_crash_safety import BytesBody, SimulatedCrashError, _request, _rows, fail_at

pytestmark = pytest.mark.anyio

DAY = 86_400.0
FIRST = csv_file(rows(25))  # tx-00000 .. tx-00024
#: Other ids but one, tx-00003, and other fields: a body of its own.
REPEATING = csv_file([row(n, customer_id="cust-other") for n in (*range(100, 124), 3)])
OTHER = csv_file([row(n) for n in range(200, 225)])
READ_AGAIN = "is read again by the serial reader"


@pytest.fixture
def settings(make_settings: SettingsFactory) -> Settings:
    return make_settings(duplicate_body_window_seconds=DAY, duplicate_transaction_ids=True)


def _index_blobs(at: Api | Services) -> set[str]:
    services = at.services if isinstance(at, Api) else at
    control = services.storage.container(services.settings.control_container)
    return {blob.name for blob in control.list(PREFIX)}


def _refused_naming(response: httpx.Response, batch_id: str, repeated: str) -> None:
    assert response.status_code == 409, response.text
    problem = response.json()
    assert problem["type"] == "urn:billing:problem:duplicate-transaction-ids"
    assert batch_id in problem["detail"]
    assert repeated in problem["detail"]
    assert "allow_duplicate=true" in problem["detail"]


async def test_a_repeated_transaction_id_is_refused_naming_the_batch_and_leaves_no_trace(
    api: Api,
) -> None:
    first = await api.post_batch(FIRST, CSV)
    assert first.status_code == 202
    api.triggers()
    after_first = api.trace()

    again = await api.post_batch(REPEATING, CSV)

    _refused_naming(again, first.json()["batch_id"], "1 transaction id of this batch")
    # No payloads, record, body mapping, index blob or work item: as before it came.
    assert api.trace() == after_first
    assert api.triggers(wait=0.05) == []


async def test_allow_duplicate_bills_it_and_its_ids_count_from_then_on(api: Api) -> None:
    first = await api.post_batch(FIRST, CSV)
    meant = await api.post_batch(REPEATING, CSV, params={"allow_duplicate": "true"})
    other = await api.post_batch(OTHER, CSV)
    # Repeats tx-00100 of the batch accepted with the override, and no id of the first.
    third = await api.post_batch(csv_file([row(100, customer_id="c"), row(300)]), CSV)

    assert [r.status_code for r in (first, meant, other)] == [202, 202, 202]
    _refused_naming(third, meant.json()["batch_id"], "1 transaction id")
    assert len(_index_blobs(api)) == 3


async def test_the_check_is_off_by_default(make_settings: SettingsFactory) -> None:
    async with started_api(make_settings(duplicate_body_window_seconds=DAY)) as api:
        answers = [await api.post_batch(body, CSV) for body in (FIRST, REPEATING)]
        assert [answer.status_code for answer in answers] == [202, 202]
        assert _index_blobs(api) == set()


async def test_ids_of_a_batch_older_than_the_window_are_billed_again(api: Api) -> None:
    first = await api.post_batch(FIRST, CSV)
    api.received_before_the_window(first.json()["batch_id"])
    (first_index,) = _index_blobs(api)

    later = await api.post_batch(REPEATING, CSV)

    assert later.status_code == 202
    assert first_index not in _index_blobs(api)  # met, found not live, deleted


async def test_index_blobs_received_before_the_window_are_deleted_by_the_next_batch(
    api: Api,
) -> None:
    control = api.services.storage.container(api.settings.control_container)
    expired = index_name("20200101-000000-0123456789ab", utc_now() - timedelta(days=2))
    control.put(expired, (await _an_index_of(api, FIRST)))

    answer = await api.post_batch(REPEATING, CSV)

    assert answer.status_code == 202
    assert expired not in _index_blobs(api)


async def _an_index_of(api: Api, body: bytes) -> bytes:
    """The index blob a batch of ``body`` leaves (the batch itself then removed from it)."""
    answer = await api.post_batch(body, CSV)
    assert answer.status_code == 202
    control = api.services.storage.container(api.settings.control_container)
    (name,) = _index_blobs(api)
    data = control.get(name).data
    control.delete(name)
    return data


def test_a_batch_abandoned_after_indexing_removes_its_index_and_refuses_nothing(
    settings: Settings, open_services_for: ServicesFactory
) -> None:
    failure = RuntimeError("storage went away")
    services = open_services_for(settings, fail_at("transaction_ids_indexed", failure))
    with pytest.raises(RuntimeError):
        services.acceptance.accept(BytesBody(FIRST), _request(key=None))
    assert _index_blobs(services) == set()
    assert _rows(services, BATCH_PARTITION) == []

    later = services.acceptance.accept(BytesBody(REPEATING), _request(key=None))

    assert later.record.status is BatchStatus.ACCEPTED


def test_the_index_of_a_crashed_intake_refuses_nothing_once_it_is_swept(
    settings: Settings, open_services_for: ServicesFactory
) -> None:
    crash = SimulatedCrashError("transaction_ids_indexed")
    services = open_services_for(settings, fail_at("transaction_ids_indexed", crash))
    with pytest.raises(SimulatedCrashError):
        services.acceptance.accept(BytesBody(FIRST), _request(key=None))
    (orphan_index,) = _index_blobs(services)
    assert sweep_orphans(services.storage, settings, older_than=timedelta(0))

    later = services.acceptance.accept(BytesBody(REPEATING), _request(key=None))

    assert later.record.status is BatchStatus.ACCEPTED
    assert orphan_index not in _index_blobs(services)


def test_a_batch_repeating_one_still_being_accepted_is_refused(
    settings: Settings, open_services_for: ServicesFactory
) -> None:
    """B arrives while A, sharing an id, has written its index blob but is not accepted yet:
    B is refused naming A, and A, which then finds no blob of B, is accepted."""
    answers: list[BaseException | str] = []

    def second_batch_meanwhile(step: str) -> None:
        if step == "transaction_ids_indexed" and not answers:
            answers.append("started")
            try:
                services.acceptance.accept(BytesBody(REPEATING), _request(key=None))
            except DuplicateTransactionIdsError as refused:
                answers.append(refused)

    services = open_services_for(settings, second_batch_meanwhile)
    first = services.acceptance.accept(BytesBody(FIRST), _request(key=None))

    assert first.record.status is BatchStatus.ACCEPTED
    refused = answers[-1]
    assert isinstance(refused, DuplicateTransactionIdsError)
    assert refused.batch_id == first.record.batch_id
    assert _rows(services, BATCH_PARTITION) == [first.record.batch_id]
    assert len(_index_blobs(services)) == 1


@pytest.mark.parametrize("processes", [1, 2], ids=["serial reader", "helpers' segments"])
async def test_both_reading_paths_feed_the_check(
    make_settings: SettingsFactory, caplog: pytest.LogCaptureFixture, processes: int
) -> None:
    settings = make_settings(
        duplicate_body_window_seconds=DAY,
        duplicate_transaction_ids=True,
        intake_processes=processes,
        intake_segment_lines=5,
    )
    many = csv_file(rows(95))  # 10 chunks of 10 lines: segments for the helpers
    repeating = csv_file([row(n, customer_id="c") for n in range(500, 594)] + [row(94)])
    with caplog.at_level(logging.INFO, logger="initiator"):
        async with started_api(settings) as api:
            first = await api.post_batch(many, CSV)
            again = await api.post_batch(repeating, CSV)
    assert first.status_code == 202
    _refused_naming(again, first.json()["batch_id"], "1 transaction id")
    assert READ_AGAIN not in caplog.text  # each file taken by the path under test

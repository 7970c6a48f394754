"""The same batch file sent twice without an Idempotency-Key is refused, not billed twice.

A body whose sha256 matches one accepted within ``BILLING_DUPLICATE_BODY_WINDOW_SECONDS``
(and whose batch is alive) answers 409 naming the earlier batch and leaves no trace;
``?allow_duplicate=true`` says it really is to be billed again.
"""

from __future__ import annotations

import anyio
import httpx
import pytest

from shared.contracts.batch_records import BATCH_PARTITION
from shared.settings import Settings
from tests.api.batch_files import csv_file, rows
from tests.api.conftest import SettingsFactory
from tests.api.harness import CSV, Api, started_api

pytestmark = pytest.mark.anyio

BODY = csv_file(rows(25))
DAY = 86_400.0


@pytest.fixture
def settings(make_settings: SettingsFactory) -> Settings:
    """The deployment default: the other tests turn the check off."""
    return make_settings(duplicate_body_window_seconds=DAY)


def _batch_ids(api: Api) -> set[str]:
    table = api.services.storage.table(api.settings.batches_table)
    return {entity.row_key for entity in table.query(BATCH_PARTITION)}


async def test_the_same_file_again_is_refused_naming_the_first_batch(api: Api) -> None:
    first = await api.post_batch(BODY, CSV)
    api.triggers()
    after_first = api.trace()

    again = await api.post_batch(BODY, CSV)

    assert first.status_code == 202
    assert again.status_code == 409
    problem = again.json()
    assert problem["type"] == "urn:billing:problem:duplicate-body"
    assert first.json()["batch_id"] in problem["detail"]
    assert "allow_duplicate=true" in problem["detail"]
    assert api.trace() == after_first  # no trace: no blobs, no record, no work items
    assert api.triggers(wait=0.05) == []


async def test_allow_duplicate_bills_it_again_and_another_file_is_never_refused(
    api: Api,
) -> None:
    first = await api.post_batch(BODY, CSV)
    meant = await api.post_batch(BODY, CSV, params={"allow_duplicate": "true"})
    other = await api.post_batch(csv_file(rows(26)), CSV)

    assert [r.status_code for r in (first, meant, other)] == [202, 202, 202]
    assert len(_batch_ids(api)) == 3


async def test_a_file_older_than_the_window_is_a_new_batch(api: Api) -> None:
    first = await api.post_batch(BODY, CSV)
    api.received_before_the_window(first.json()["batch_id"])

    later = await api.post_batch(BODY, CSV)

    assert later.status_code == 202
    assert later.json()["batch_id"] != first.json()["batch_id"]


async def test_concurrent_identical_files_make_one_batch(api: Api) -> None:
    responses: list[httpx.Response] = []

    async def post() -> None:
        responses.append(await api.post_batch(BODY, CSV))

    async with anyio.create_task_group() as group:
        for _ in range(3):
            group.start_soon(post)

    statuses = sorted(response.status_code for response in responses)
    assert statuses == [202, 409, 409]
    assert len(_batch_ids(api)) == 1


async def test_the_check_can_be_turned_off(make_settings: SettingsFactory) -> None:
    async with started_api(make_settings(duplicate_body_window_seconds=0)) as api:
        answers = [await api.post_batch(BODY, CSV) for _ in range(2)]
    assert [answer.status_code for answer in answers] == [202, 202]

"""Which abandoned batches the initiator reports to the controller (``BatchAbandoned`` on the
output queue, for the ``billing.batch.abandoned`` event), and which it does not.

Reported: a valid batch the intake gave up on (a storage failure while accepting) and an
intake the sweeper found stopped. Not reported: a rejected batch, which leaves no trace.
The controller's side is tests/controller/test_abandoned_events.py.
"""

from __future__ import annotations

from datetime import timedelta

import pytest

from initiator.dependencies import Services
from initiator.intake.problems import BatchRejected
from initiator.publishing import sweep_orphans
from shared.contracts.batch_status import AbandonReason
from shared.contracts.messages import BatchAbandoned
from shared.settings import Settings
from tests.api.batch_files import csv_file, row, rows
from tests.api.conftest import ServicesFactory
from tests.api.test_crash_safety import BODY, BytesBody, SimulatedCrashError, _request, fail_at


def reports(services: Services) -> list[BatchAbandoned]:
    output = services.storage.queue(services.settings.output_queue)
    return [BatchAbandoned.model_validate_json(message.content) for message in output.peek()]


def test_a_batch_given_up_while_accepting_is_reported_with_its_totals(
    open_services_for: ServicesFactory, settings: Settings
) -> None:
    failure = RuntimeError("injected failure while enqueueing")
    services = open_services_for(settings, fail_at("work_item_sent", failure, 2))

    with pytest.raises(RuntimeError, match="injected failure"):
        services.acceptance.accept(BytesBody(BODY), _request())

    [report] = reports(services)
    assert report.reason is AbandonReason.INTAKE_FAILED
    assert (report.transactions, report.chunks, report.priority) == (45, 5, "normal")
    assert report.control_totals is not None
    assert report.control_totals.transactions == 45


def test_a_rejected_batch_is_not_reported(
    open_services_for: ServicesFactory, settings: Settings
) -> None:
    services = open_services_for(settings)
    bad = csv_file([*rows(30), row(30, sku="NO-SUCH-SKU")])

    with pytest.raises(BatchRejected):
        services.acceptance.accept(BytesBody(bad), _request())

    assert reports(services) == []


def test_a_stopped_intake_is_reported_by_the_sweeper(
    open_services_for: ServicesFactory, settings: Settings
) -> None:
    crash = fail_at("record_accepting", SimulatedCrashError("record_accepting"))
    services = open_services_for(settings, crash)
    with pytest.raises(SimulatedCrashError):
        services.acceptance.accept(BytesBody(BODY), _request())
    assert reports(services) == []

    [batch_id] = sweep_orphans(services.storage, settings, older_than=timedelta(0))

    [report] = reports(services)
    assert (report.batch_id, report.reason) == (batch_id, AbandonReason.INTAKE_STOPPED)

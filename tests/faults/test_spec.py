"""``BILLING_FAULTS``: parsed once into a typed spec, with clear errors; plans draw from it."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
from pydantic import ValidationError

from shared.bus import open_bus
from shared.faults.plan import FaultKind, FaultPlan
from shared.faults.spec import FaultSpec
from shared.settings import Settings
from shared.storage import open_storage
from shared.storage.embedded import EmbeddedStorageAccount


def settings(**values: object) -> Settings:
    return Settings(_env_file=None, **values)  # type: ignore[call-arg, arg-type]


def test_the_setting_is_parsed_into_a_typed_spec(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BILLING_FAULTS", "fail=0.1, lose=0.02, seed=7, statuses=503+429")
    spec = settings().faults
    assert spec == FaultSpec(fail=0.1, lose=0.02, seed=7, statuses=(503, 429))
    assert spec is not None
    assert spec.applies_to("table")
    assert spec.applies_to("bus")


def test_faults_are_off_by_default_and_for_an_empty_value() -> None:
    assert settings().faults is None
    assert settings(faults="").faults is None


def test_on_limits_the_targets_and_storage_names_three() -> None:
    spec = FaultSpec.parse("fail=1,on=storage")
    assert spec.on == {"blob", "queue", "table"}
    assert not spec.applies_to("bus")
    assert FaultSpec.parse("timeout=1,on=bus").on == {"bus"}


@pytest.mark.parametrize(
    ("value", "complaint"),
    [
        ("fial=0.1", "unknown key 'fial'"),
        ("fail", "expected key=value"),
        ("fail=0.7,lose=0.5", "must not exceed 1"),
        ("fail=2", "less than or equal to 1"),
        ("statuses=404", "statuses must be some of"),
        ("on=disk", "on"),
    ],
)
def test_a_bad_value_says_what_is_wrong(value: str, complaint: str) -> None:
    with pytest.raises(ValidationError, match=complaint):
        settings(faults=value)


def test_a_plan_injects_each_kind_at_its_share() -> None:
    plan = FaultPlan(FaultSpec(fail=0.1, timeout=0.05, lose=0.02, seed=3), "unit")
    draws = [plan.draw() for _ in range(20_000)]
    share = {
        kind: sum(1 for d in draws if d is not None and d.kind is kind) / len(draws)
        for kind in FaultKind
    }
    assert share[FaultKind.STATUS] == pytest.approx(0.1, abs=0.01)
    assert share[FaultKind.TIMEOUT] == pytest.approx(0.05, abs=0.01)
    assert share[FaultKind.LOST_RESPONSE] == pytest.approx(0.02, abs=0.005)
    statuses = {d.status for d in draws if d is not None and d.kind is FaultKind.STATUS}
    assert statuses == {500, 503, 429}
    assert sum(plan.injected().values()) == sum(1 for d in draws if d is not None)


def test_two_plans_of_one_label_do_not_fail_in_lock_step() -> None:
    spec = FaultSpec(fail=0.5, seed=11)
    first, second = FaultPlan(spec, "same"), FaultPlan(spec, "same")
    a = [first.draw() for _ in range(64)]
    b = [second.draw() for _ in range(64)]
    assert a != b


def test_storage_and_bus_opened_under_faults_say_so_loudly(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    under_faults = settings(data_dir=tmp_path, faults="fail=0.1,seed=1")
    with caplog.at_level(logging.WARNING, logger="shared.faults"):
        storage, bus = open_storage(under_faults), open_bus(under_faults)
    storage.close()
    bus.close()
    loud = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(loud) == 4  # blob, queue, table, bus
    assert all("FAULT INJECTION ON" in line and "fail=0.1" in line for line in loud)


def test_without_the_setting_nothing_is_wrapped(tmp_path: Path) -> None:
    storage = open_storage(settings(data_dir=tmp_path))
    assert isinstance(storage, EmbeddedStorageAccount)
    storage.close()

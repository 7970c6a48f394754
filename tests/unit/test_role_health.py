"""A role's health: starting, then what its probe says, then stopping for good."""

from __future__ import annotations

from shared.role_health import RoleHealth, Status, first_reason


def test_starting_until_a_probe_is_registered() -> None:
    health = RoleHealth()
    assert health.status() == Status("starting", "starting")
    assert not health.status().well


def test_the_probe_is_asked_at_every_status() -> None:
    reasons: list[str | None] = [None, "worker processes not running: processor-0", None]
    health = RoleHealth()
    health.register(lambda: reasons.pop(0))
    assert health.status() == Status("well", "ok")
    assert health.status() == Status("unwell", "worker processes not running: processor-0")
    assert health.status().well


def test_a_reason_is_one_line_and_a_raising_probe_is_unwell() -> None:
    health = RoleHealth()
    health.register(lambda: "two\nlines")
    assert health.status() == Status("unwell", "two lines")

    def broken() -> str | None:
        raise RuntimeError("no snapshot")

    health.register(broken)
    assert health.status() == Status("unwell", "health probe failed: RuntimeError: no snapshot")


def test_withdrawn_it_is_stopping_whatever_the_probe_says() -> None:
    health = RoleHealth()
    health.register(lambda: None)
    health.withdraw()
    assert health.status() == Status("stopping", "stopping")


def test_first_reason_answers_with_the_first_probe_that_has_one() -> None:
    warehouse: list[str | None] = [None]
    wedged: list[str | None] = [None]
    probe = first_reason(lambda: warehouse[0], lambda: wedged[0])
    assert probe() is None
    wedged[0] = "handler thread t busy for 612 s"
    assert probe() == "handler thread t busy for 612 s"
    warehouse[0] = "the warehouse is unreachable"
    assert probe() == "the warehouse is unreachable"

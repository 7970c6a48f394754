"""The scaling rule: depth → threads, from settings."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from shared.listener import ScalingRule, ScalingRuleError
from shared.listener_settings import listener_config
from shared.settings import Settings
from tests.listener.helpers import ListenerFactory, fast_config, make_sources, memq
from tests.support.memory_queue import MemoryQueues


@pytest.mark.parametrize(
    ("depth", "threads"),
    [(0, 1), (1, 1), (63, 1), (64, 2), (511, 2), (512, 4), (1_000_000, 4), (-5, 1)],
)
def test_default_rule_values(depth: int, threads: int) -> None:
    rule = ScalingRule.parse("0:1,64:2,512:4", max_threads=8)
    assert rule.optimal_threads(depth) == threads


def test_the_rule_is_capped_by_max_threads() -> None:
    rule = ScalingRule.parse("0:1, 10:4, 100:16", max_threads=6)
    assert [rule.optimal_threads(d) for d in (0, 10, 100)] == [1, 4, 6]


def test_spaces_and_a_trailing_comma_are_fine() -> None:
    rule = ScalingRule.parse(" 0 : 2 , 50:3 ,", max_threads=8)
    assert (rule.thresholds, rule.threads) == ((0, 50), (2, 3))


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("", "no 'depth:threads' steps"),
        ("abc", "two integers"),
        ("0:1;64:2", "two integers"),
        ("0:1,64", "two integers"),
        ("0:0", "threads >= 1"),
        ("-1:1", "depth must be >= 0"),
        ("10:1,64:2", "must start at depth 0"),
        ("0:1,64:2,64:3", "strictly rise"),
        ("0:4,64:2", "must not fall"),
    ],
)
def test_bad_rules_fail_with_a_clear_reason(text: str, reason: str) -> None:
    with pytest.raises(ScalingRuleError, match=reason):
        ScalingRule.parse(text, max_threads=8)


def test_a_bad_rule_in_the_settings_fails_when_the_config_is_built() -> None:
    settings = Settings(scaling_rule="0:1,lots:2", _env_file=None)  # type: ignore[call-arg]
    with pytest.raises(ValidationError, match="two integers"):
        listener_config(settings)


def test_the_config_takes_the_rule_and_cap_from_settings() -> None:
    settings = Settings(  # type: ignore[call-arg]
        scaling_rule="0:1,8:3", max_dequeue_threads=2, _env_file=None
    )
    rule = listener_config(settings).rule
    assert rule.optimal_threads(100) == 2
    assert rule.optimal_threads(0) == 1


@pytest.mark.parametrize(("rule", "asks"), [("0:1", False), ("0:1,1:2", True)])
def test_work_detected_asks_the_depth_only_when_it_could_start_a_thread(
    queues: MemoryQueues, listener_factory: ListenerFactory, rule: str, asks: bool
) -> None:
    # With as many threads running as any depth deserves, a trigger (and a dequeue thread
    # that found work after an empty receive) only wakes them: a depth request would
    # change nothing. The default rule, one thread, is such a rule.
    (source,) = make_sources(queues)
    listener = listener_factory(
        [source], lambda lease: None, fast_config(scaling_rule=rule), trigger_available=True
    )
    listener.start(threads=1)
    before = memq(source).calls["count"]

    listener.on_work_detected()

    assert (memq(source).calls["count"] > before) is asks

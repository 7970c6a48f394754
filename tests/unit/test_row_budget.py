"""The processor's row budget: transactions held at once, shared by its handlers."""

from __future__ import annotations

import threading

import pytest

from processor.row_budget import RowBudget


def test_a_share_that_does_not_fit_waits_until_another_leaves() -> None:
    budget = RowBudget(10)
    entered = threading.Event()
    with budget.hold(6):

        def second() -> None:
            with budget.hold(6):
                entered.set()

        thread = threading.Thread(target=second)
        thread.start()
        assert not entered.wait(0.2), "6 + 6 rows do not fit in 10"
        with budget.hold(4):  # but 4 more do, beside the first 6
            pass
    assert entered.wait(10), "the first left: the second goes"
    thread.join(10)


def test_a_chunk_larger_than_the_budget_runs_alone_rather_than_never() -> None:
    budget = RowBudget(10)
    done = threading.Event()

    def big() -> None:
        with budget.hold(50):
            done.set()

    threading.Thread(target=big, daemon=True).start()
    assert done.wait(10)


def test_a_budget_needs_room_for_one_transaction() -> None:
    with pytest.raises(ValueError, match="at least one"):
        RowBudget(0)

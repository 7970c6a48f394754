"""What ``billing cost`` prices: the meter's figures from a benchmark report or the live view.

Two sources, each turned into a :class:`~shared.cost.estimate.Usage`:

* a report of ``python -m bench.end_to_end --json FILE``: its hot path's requests per 1,000
  transactions by kind (``hot_path.kind.<kind>.requests_per_1000``) and each role's CPU per
  transaction (``hot_path.<role>.cpu_us_per_transaction``), summed over the roles;
* an answer of the initiator's ``GET /dashboard/live``: its samples' storage requests per
  minute, per transaction applied in the busy samples, per hour in the idle ones. The live
  figures count the initiator and the processors, not the controller, and carry no CPU.
  The samples exist only while someone watches; without a busy one, the processors'
  heartbeats give the figure instead: each process's requests since it started over the
  transactions it rated (its idle requests included, so a little high). Requests made for
  an onlooker (``queue.count@dashboard``) are the watcher's cost, not the deployment's:
  left out.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from initiator.observability.history import Sample
from initiator.observability.live import LiveView
from shared import meter
from shared.cost.estimate import Usage

_KIND = re.compile(r"^hot_path\.kind\.(?P<kind>.+)\.requests_per_1000$")
_CPU = re.compile(r"^hot_path\.(?P<role>[a-z_]+)\.cpu_us_per_transaction$")


class UnknownSourceError(ValueError):
    """The file is neither an end-to-end benchmark report nor a live view."""


def usage_from_file(path: Path) -> Usage:
    """The usage in ``path``: a bench report or a saved ``/dashboard/live`` answer."""
    try:
        document: Any = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        raise UnknownSourceError(f"{path}: not a readable JSON file ({error})") from error
    if isinstance(document, dict) and "figures" in document:
        return usage_from_report(document["figures"], source=str(path))
    if isinstance(document, dict) and "samples" in document:
        return usage_from_live(LiveView.model_validate(document))
    raise UnknownSourceError(
        f"{path}: neither a bench report (no 'figures') nor a /dashboard/live answer (no 'samples')"
    )


def usage_from_report(figures: Mapping[str, float], *, source: str = "the report") -> Usage:
    requests = {m["kind"]: v for key, v in figures.items() if (m := _KIND.match(key))}
    if not requests:
        raise UnknownSourceError(
            f"{source}: no hot_path.kind.<kind>.requests_per_1000 figures; "
            "make it with python -m bench.end_to_end --json FILE"
        )
    cpu = [v for key, v in figures.items() if _CPU.match(key)]
    return Usage(requests_per_1000=requests, cpu_us_per_transaction=sum(cpu) if cpu else None)


def usage_from_live(view: LiveView) -> Usage:
    busy = [s for s in view.samples if s.applied_per_second > 0 or s.rated_per_second > 0]
    idle = [s for s in view.samples if s not in busy]
    applied_per_minute = sum(s.applied_per_second * 60 for s in busy)
    requests_per_1000 = (
        {k: n * 1000 / applied_per_minute for k, n in _summed(busy).items()}
        if applied_per_minute
        else _from_heartbeats(view)
    )
    idle_per_hour = {k: n * 60 / len(idle) for k, n in _summed(idle).items()} if idle else {}
    return Usage(
        requests_per_1000=requests_per_1000 or {},
        idle_requests_per_hour=idle_per_hour,
        transactions_measured=requests_per_1000 is not None,
    )


def _from_heartbeats(view: LiveView) -> dict[str, float] | None:
    """Requests per 1,000 transactions from the processors' counters since they started;
    None when they have rated none (nothing to divide by)."""
    rated = sum(p.rated_transactions for p in view.processors)
    if not rated:
        return None
    processes = {(p.host, p.pid): p.storage_requests for p in view.processors}
    total: dict[str, float] = {}
    for counts in processes.values():
        for kind, count in counts.items():
            if meter.caller_of(kind) is None:
                total[kind] = total.get(kind, 0.0) + count
    return {kind: n * 1000 / rated for kind, n in sorted(total.items())}


def _summed(samples: Sequence[Sample]) -> dict[str, float]:
    total: dict[str, float] = {}
    for sample in samples:
        for kind, rate in sample.requests_per_minute.items():
            if meter.caller_of(kind) is None:  # the watcher's requests, not the deployment's
                total[kind] = total.get(kind, 0.0) + rate
    return total

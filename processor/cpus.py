"""How many CPUs this process may really use: its affinity and its cgroup's CPU quota.

``os.cpu_count()`` is the machine's core count. In a container it is the host's, however
small the container's share, so ``billing processor`` would start one rating process per
host core and have them fight over, say, half a core. What bounds a process is

* its **affinity** (``taskset``, ``docker run --cpuset-cpus``): the cores it may run on;
* its cgroup's **CPU quota** (``docker run --cpus``, Kubernetes and Container Apps limits):
  ``quota / period`` cores' worth of time, read from ``cpu.max`` (cgroup v2) or
  ``cpu.cfs_quota_us`` / ``cpu.cfs_period_us`` (cgroup v1), on the process's own cgroup
  and every ancestor, since a parent's limit binds its children too.

The answer is the smaller of the two, a fractional quota rounded up (0.5 core still runs
one process), and at least 1. Every path is read under ``root`` so that tests can lay out
fake ``/proc`` and ``/sys/fs/cgroup`` files in a temporary folder.
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterator
from pathlib import Path, PurePosixPath

CGROUP_MOUNT = PurePosixPath("sys/fs/cgroup")
#: Where cgroup v1 mounts the cpu controller (alone, or joined with cpuacct).
V1_CPU_MOUNTS = ("cpu", "cpu,cpuacct", "cpuacct,cpu")


def available_cpus(root: Path = Path("/")) -> int:
    """The number of processes worth running for CPU-bound work in this process's place."""
    cores = _affinity_count(root)
    quota = cgroup_cpu_limit(root)
    if quota is not None:
        cores = min(cores, max(1, math.ceil(quota)))
    return max(1, cores)


def cgroup_cpu_limit(root: Path = Path("/")) -> float | None:
    """The tightest CPU quota (in cores) over this process's cgroup and its ancestors;
    ``None`` when there is none or it cannot be read (not Linux, no cgroup mounted)."""
    limits = [limit for limit in _quotas(root) if limit is not None]
    return min(limits) if limits else None


def _affinity_count(root: Path) -> int:
    if root == Path("/") and hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    listed = _read(root / "proc/self/status")
    for line in (listed or "").splitlines():
        if line.startswith("Cpus_allowed_list:"):
            return _count_cpu_list(line.split(":", 1)[1])
    return os.cpu_count() or 1


def _count_cpu_list(text: str) -> int:
    """``"0-3,6"`` → 5."""
    count = 0
    for part in text.strip().split(","):
        if not part:
            continue
        first, _, last = part.partition("-")
        count += int(last or first) - int(first) + 1
    return count


def _quotas(root: Path) -> Iterator[float | None]:
    """One quota (or ``None`` for "no limit") per cgroup directory from leaf to root."""
    memberships = _read(root / "proc/self/cgroup")
    if memberships is None:
        return
    for line in memberships.splitlines():
        hierarchy, _, rest = line.partition(":")
        controllers, _, path = rest.partition(":")
        if hierarchy == "0" and controllers == "":
            yield from _v2_quotas(root / CGROUP_MOUNT, path)
        elif "cpu" in controllers.split(","):
            for mount in V1_CPU_MOUNTS:
                base = root / CGROUP_MOUNT / mount
                if base.is_dir():
                    yield from _v1_quotas(base, path)
                    break


def _v2_quotas(mount: Path, path: str) -> Iterator[float | None]:
    for directory in _leaf_to_root(mount, path):
        text = _read(directory / "cpu.max")
        if text is None:
            continue
        fields = text.split()  # "<quota> <period>" or "max <period>"
        yield _ratio(fields[0], fields[1]) if len(fields) == 2 else None


def _v1_quotas(mount: Path, path: str) -> Iterator[float | None]:
    for directory in _leaf_to_root(mount, path):
        quota, period = (
            _read(directory / "cpu.cfs_quota_us"),
            _read(directory / "cpu.cfs_period_us"),
        )
        if quota is None or period is None:
            continue
        yield _ratio(quota, period)  # a quota of -1 means none


def _ratio(quota: str, period: str) -> float | None:
    try:
        cores = int(quota) / int(period)
    except (ValueError, ZeroDivisionError):  # "max", or a file we do not understand
        return None
    return cores if cores > 0 else None


def _leaf_to_root(mount: Path, path: str) -> Iterator[Path]:
    """``mount/a/b``, ``mount/a``, ``mount``. Inside a container the cgroup namespace makes
    the path ``/`` and the mount is the container's own cgroup."""
    parts = [part for part in PurePosixPath(path or "/").parts if part != "/"]
    while True:
        yield mount.joinpath(*parts)
        if not parts:
            return
        parts.pop()


def _read(path: Path) -> str | None:
    try:
        return path.read_text().strip()
    except (OSError, UnicodeDecodeError):
        return None

"""``available_cpus``: affinity and cgroup CPU quotas, read from fake files in a temp dir."""

from __future__ import annotations

from pathlib import Path

import pytest

from processor.cpus import available_cpus, cgroup_cpu_limit


def _write(root: Path, relative: str, text: str) -> None:
    path = root / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


@pytest.fixture
def root(tmp_path: Path) -> Path:
    """A fake machine with 8 allowed cores and no cgroup files yet."""
    _write(tmp_path, "proc/self/status", "Name:\tpython\nCpus_allowed_list:\t0-7\n")
    return tmp_path


def test_no_cgroup_information_leaves_the_affinity(root: Path) -> None:
    assert cgroup_cpu_limit(root) is None
    assert available_cpus(root) == 8


def test_affinity_counts_ranges_and_single_cores(root: Path) -> None:
    _write(root, "proc/self/status", "Cpus_allowed_list:\t0-1,4,6-7\n")
    assert available_cpus(root) == 5


def test_v2_quota_in_a_container_namespace(root: Path) -> None:
    """``docker run --cpus 2``: the container sees its own cgroup at the mount's root."""
    _write(root, "proc/self/cgroup", "0::/\n")
    _write(root, "sys/fs/cgroup/cpu.max", "200000 100000\n")
    assert cgroup_cpu_limit(root) == 2.0
    assert available_cpus(root) == 2


def test_v2_unlimited(root: Path) -> None:
    _write(root, "proc/self/cgroup", "0::/\n")
    _write(root, "sys/fs/cgroup/cpu.max", "max 100000\n")
    assert cgroup_cpu_limit(root) is None
    assert available_cpus(root) == 8


def test_v2_fraction_rounds_up_to_one_process(root: Path) -> None:
    """Container Apps' 0.5 vCPU still runs one rating process."""
    _write(root, "proc/self/cgroup", "0::/\n")
    _write(root, "sys/fs/cgroup/cpu.max", "50000 100000\n")
    assert cgroup_cpu_limit(root) == 0.5
    assert available_cpus(root) == 1


def test_v2_takes_the_tightest_ancestor(root: Path) -> None:
    """A parent's limit binds the children (a pod's limit over its container's)."""
    _write(root, "proc/self/cgroup", "0::/kubepods/pod1/ctr\n")
    _write(root, "sys/fs/cgroup/kubepods/pod1/ctr/cpu.max", "max 100000\n")
    _write(root, "sys/fs/cgroup/kubepods/pod1/cpu.max", "300000 100000\n")
    _write(root, "sys/fs/cgroup/kubepods/cpu.max", "600000 100000\n")
    assert cgroup_cpu_limit(root) == 3.0
    assert available_cpus(root) == 3


def test_quota_above_the_affinity_leaves_the_affinity(root: Path) -> None:
    _write(root, "proc/self/status", "Cpus_allowed_list:\t0-1\n")
    _write(root, "proc/self/cgroup", "0::/\n")
    _write(root, "sys/fs/cgroup/cpu.max", "400000 100000\n")
    assert available_cpus(root) == 2


def test_v1_quota_on_the_joined_cpu_cpuacct_mount(root: Path) -> None:
    _write(
        root,
        "proc/self/cgroup",
        "12:memory:/docker/abc\n4:cpu,cpuacct:/docker/abc\n1:name=systemd:/docker/abc\n",
    )
    _write(root, "sys/fs/cgroup/cpu,cpuacct/docker/abc/cpu.cfs_quota_us", "150000\n")
    _write(root, "sys/fs/cgroup/cpu,cpuacct/docker/abc/cpu.cfs_period_us", "100000\n")
    assert cgroup_cpu_limit(root) == 1.5
    assert available_cpus(root) == 2


def test_v1_unlimited_is_minus_one(root: Path) -> None:
    _write(root, "proc/self/cgroup", "2:cpu:/\n")
    _write(root, "sys/fs/cgroup/cpu/cpu.cfs_quota_us", "-1\n")
    _write(root, "sys/fs/cgroup/cpu/cpu.cfs_period_us", "100000\n")
    assert cgroup_cpu_limit(root) is None
    assert available_cpus(root) == 8


def test_unreadable_files_are_no_limit(root: Path) -> None:
    _write(root, "proc/self/cgroup", "0::/\n")
    _write(root, "sys/fs/cgroup/cpu.max", "garbage\n")
    assert cgroup_cpu_limit(root) is None
    assert available_cpus(root) == 8


def test_this_machine_gives_at_least_one() -> None:
    assert available_cpus() >= 1

"""What an install installs: the extras exist, the versions are pinned, and each script
asks for only what it needs (``make demo`` the project alone, the tests dev and bench)."""

from __future__ import annotations

import os
import shutil
import subprocess
import tomllib
from importlib import metadata
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parents[2]
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]


def requirements() -> list[Requirement]:
    groups = [PROJECT["dependencies"], *PROJECT["optional-dependencies"].values()]
    return [Requirement(text) for group in groups for text in group]


def pins() -> dict[str, str]:
    lines = (ROOT / "constraints.txt").read_text(encoding="utf-8").splitlines()
    pairs = [line.split("==") for line in lines if line and not line.startswith("#")]
    return {canonicalize_name(name): version for name, version in pairs}


def test_every_extra_asked_of_a_dependency_exists() -> None:
    for requirement in requirements():
        if not requirement.extras:
            continue
        provided = metadata.distribution(requirement.name).metadata.get_all("Provides-Extra")
        missing = requirement.extras - {canonicalize_name(e) for e in provided or []}
        assert not missing, f"{requirement.name} provides no extra {sorted(missing)}"


def test_constraints_pin_every_requirement_within_its_range() -> None:
    pinned = pins()
    for requirement in requirements():
        version = pinned.get(canonicalize_name(requirement.name))
        assert version is not None, f"constraints.txt does not pin {requirement.name}"
        assert requirement.specifier.contains(version, prereleases=True), (requirement, version)


def bootstrap_in(folder: Path) -> None:
    """A copy of the project's install script over a stand-in venv whose python logs its
    arguments instead of installing anything."""
    (folder / "scripts").mkdir()
    shutil.copy(ROOT / "scripts" / "bootstrap.sh", folder / "scripts")
    for name in ("pyproject.toml", "constraints.txt"):
        shutil.copy(ROOT / name, folder)
    python = folder / ".venv" / "bin" / "python"
    python.parent.mkdir(parents=True)
    python.write_text('#!/bin/sh\necho "$@" >> "$(dirname "$0")/../calls"\n')
    python.chmod(0o755)


def run_bootstrap(folder: Path, *extras: str) -> list[str]:
    """The pip calls one run of the script made."""
    calls = folder / ".venv" / "calls"
    before = calls.read_text().splitlines() if calls.exists() else []
    subprocess.run(
        ["bash", str(folder / "scripts" / "bootstrap.sh"), *extras],
        check=True,
        env={**os.environ, "PYTHON": "false"},  # never makes a real venv
    )
    after = calls.read_text().splitlines() if calls.exists() else []
    return after[len(before) :]


def test_bootstrap_installs_the_extras_asked_for_pinned_and_only_when_needed(
    tmp_path: Path,
) -> None:
    bootstrap_in(tmp_path)
    install = "-m pip install --quiet -c constraints.txt -e"

    assert run_bootstrap(tmp_path) == [f"{install} ."]  # what make demo needs
    assert run_bootstrap(tmp_path) == []  # done already
    assert run_bootstrap(tmp_path, "dev", "bench") == [f"{install} .[bench,dev]"]
    assert run_bootstrap(tmp_path, "dev") == []
    assert run_bootstrap(tmp_path) == []
    os.utime(tmp_path / "pyproject.toml", (1e10, 1e10))  # edited since
    assert run_bootstrap(tmp_path) == [f"{install} .[bench,dev]"]  # keeps what it had


def test_each_command_installs_what_it_needs() -> None:
    demo = (ROOT / "scripts" / "demo.sh").read_text()
    tests = (ROOT / "scripts" / "test.sh").read_text()
    assert "scripts/bootstrap.sh\n" in demo  # no extra: the demo needs none
    assert "scripts/bootstrap.sh dev bench\n" in tests
    assert "scripts/bootstrap.sh bench &&" in (ROOT / "Makefile").read_text()
    dockerfile = (ROOT / "Dockerfile").read_text()
    assert "-c constraints.txt" in dockerfile
    assert "!constraints.txt" in (ROOT / ".dockerignore").read_text()

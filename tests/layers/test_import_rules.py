"""The floor plan as a build rule: ``[tool.importlinter]`` in pyproject.toml, checked here.

``billing`` (the composition) may import the roles; the roles (``initiator``, ``processor``,
``controller``) import ``shared`` and never one another; ``shared`` imports no role and not
``billing``. The second test runs the same contracts over a small package tree with one bad
import, so a contract that stopped catching what it should would fail too.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
PACKAGES = ("billing", "initiator", "processor", "controller", "shared")


def lint_imports(root: Path) -> subprocess.CompletedProcess[str]:
    """Run import-linter with the repository's contracts over the packages found in ``root``."""
    code = (
        "import sys; from importlinter.cli import lint_imports; "
        "sys.exit(lint_imports(config_filename='pyproject.toml', no_cache=True))"
    )
    return subprocess.run(
        [sys.executable, "-c", code],
        cwd=root,
        env={"PYTHONPATH": str(root), "PATH": "", "NO_COLOR": "1"},
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_the_repository_keeps_its_import_rules() -> None:
    result = lint_imports(REPO)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "0 broken" in result.stdout


def a_tree(root: Path, bad_import: tuple[str, str] | None) -> Path:
    """The five packages, each importing only what the rules allow, plus ``bad_import``."""
    allowed = {
        "billing": ["initiator.api", "processor.api", "controller.api", "shared.api"],
        "initiator": ["shared.api"],
        "processor": ["shared.api"],
        "controller": ["shared.api"],
        "shared": [],
    }
    for package in PACKAGES:
        folder = root / package
        folder.mkdir()
        (folder / "__init__.py").write_text("")
        lines = [f"import {module}" for module in allowed[package]]
        if bad_import and bad_import[0] == package:
            lines.append(f"import {bad_import[1]}")
        (folder / "api.py").write_text("\n".join(lines) + "\n")
    shutil.copy(REPO / "pyproject.toml", root / "pyproject.toml")
    return root


def test_a_tree_that_follows_the_rules_passes(tmp_path: Path) -> None:
    result = lint_imports(a_tree(tmp_path, None))
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.parametrize(
    ("importer", "imported"),
    [
        ("processor", "controller.api"),
        ("controller", "processor.api"),
        ("initiator", "controller.api"),
        ("shared", "initiator.api"),
        ("shared", "billing.api"),
        ("processor", "billing.api"),
    ],
)
def test_a_forbidden_import_breaks_the_build(tmp_path: Path, importer: str, imported: str) -> None:
    result = lint_imports(a_tree(tmp_path, (importer, imported)))
    assert result.returncode != 0
    assert "BROKEN" in result.stdout
    assert f"{importer}.api -> {imported}" in result.stdout

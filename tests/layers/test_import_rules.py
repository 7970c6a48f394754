"""The floor plan as a build rule: ``[tool.importlinter]`` in pyproject.toml, checked here.

``billing`` (the composition) may import the roles; the roles (``initiator``, ``processor``,
``controller``) import ``shared`` and never one another; ``shared`` imports no role and not
``billing``; the listener engine reads no application settings and no message format. The
other tests run the same contracts over a small package tree, with and without one bad
import, so contracts that stopped catching what they should would fail too.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


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


#: A module of each package the contracts name, and what it may import.
ALLOWED = {
    "billing.api": ["initiator.api", "processor.api", "controller.api", "shared.api"],
    "initiator.api": ["shared.api"],
    "processor.api": ["shared.api"],
    "controller.api": ["shared.api"],
    "shared.api": ["shared.settings", "shared.listener.engine"],
    "shared.settings": [],
    "shared.listener_settings": ["shared.settings", "shared.listener.engine"],
    "shared.contracts.messages": ["shared.settings"],
    "shared.listener.engine": [],
}


def a_tree(root: Path, bad_import: tuple[str, str] | None) -> Path:
    """Modules that import only what the rules allow, plus ``bad_import``."""
    for module, imports in ALLOWED.items():
        path = root.joinpath(*module.split("."))
        for folder in [path.parent, *path.parent.parents]:
            if folder == root:
                break
            folder.mkdir(parents=True, exist_ok=True)
            (folder / "__init__.py").touch()
        lines = [f"import {imported}" for imported in imports]
        if bad_import and bad_import[0] == module:
            lines.append(f"import {bad_import[1]}")
        path.with_suffix(".py").write_text("\n".join(lines) + "\n")
    shutil.copy(REPO / "pyproject.toml", root / "pyproject.toml")
    return root


def test_a_tree_that_follows_the_rules_passes(tmp_path: Path) -> None:
    result = lint_imports(a_tree(tmp_path, None))
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.parametrize(
    ("importer", "imported"),
    [
        ("processor.api", "controller.api"),
        ("controller.api", "processor.api"),
        ("initiator.api", "controller.api"),
        ("shared.api", "initiator.api"),
        ("shared.api", "billing.api"),
        ("processor.api", "billing.api"),
        ("shared.listener.engine", "shared.settings"),
        ("shared.listener.engine", "shared.contracts.messages"),
    ],
)
def test_a_forbidden_import_breaks_the_build(tmp_path: Path, importer: str, imported: str) -> None:
    result = lint_imports(a_tree(tmp_path, (importer, imported)))
    assert result.returncode != 0
    assert "BROKEN" in result.stdout
    assert f"{importer} -> {imported}" in result.stdout

"""docs/walkthrough.md and the modules' "Next step" lines tell the same story, and it is true.

The walkthrough names the files a batch passes through; each of those modules' docstrings
names the next one. A renamed or moved module must not leave either pointing at nothing.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
WALKTHROUGH = ROOT / "docs" / "walkthrough.md"
PACKAGES = ("initiator", "processor", "controller", "shared")
NEXT_STEP = "Next step (docs/walkthrough.md):"


def _module_path(dotted: str) -> Path:
    parts = dotted.split(".")
    as_module = ROOT.joinpath(*parts).with_suffix(".py")
    return as_module if as_module.exists() else ROOT.joinpath(*parts, "__init__.py")


def _next_steps() -> dict[str, list[str]]:
    """module path → the modules its docstring's next step names."""
    found: dict[str, list[str]] = {}
    for package in PACKAGES:
        for path in (ROOT / package).rglob("*.py"):
            docstring = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8"))) or ""
            if NEXT_STEP in docstring:
                step = " ".join(docstring.split(NEXT_STEP, 1)[1].split())
                found[str(path.relative_to(ROOT))] = re.findall(r"``([a-z_.]+)``", step)
    return found


def test_every_file_the_walkthrough_names_exists() -> None:
    named = set(re.findall(r"`([a-z_/]+\.py)`", WALKTHROUGH.read_text(encoding="utf-8")))
    assert len(named) > 20
    # A bare file name stands for a module of the package named just before it.
    bare = {path.name for package in PACKAGES for path in (ROOT / package).rglob("*.py")}
    missing = sorted(
        name for name in named if not ((ROOT / name).exists() if "/" in name else name in bare)
    )
    assert missing == [], missing


def test_each_step_names_a_next_module_that_exists_and_the_walkthrough_shows() -> None:
    walkthrough = WALKTHROUGH.read_text(encoding="utf-8")
    steps = _next_steps()
    assert len(steps) >= 15
    for module, next_modules in steps.items():
        assert module in walkthrough, f"{module} has a next step but is not in the walkthrough"
        for dotted in next_modules:
            path = _module_path(dotted)
            assert path.exists(), f"{module} names {dotted}, which does not exist"

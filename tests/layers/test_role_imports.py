"""A role process imports its own code, not the other roles' nor the tools'.

``billing``'s commands load their modules when they run (:mod:`billing.cli.app`), and the
deployment imports a role's code when it makes the role (:mod:`billing.deployment`). Each
check runs in a fresh interpreter what that process imports: the console script's module,
then the module its body lives in (a ``spawn`` worker unpickles its target from there).
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from billing.cli.app import COMMAND_MODULES, commands_of

#: Packages a role must not load: the other roles, the web stack, the warehouse's Alembic.
HEAVY = ("initiator", "processor", "controller", "fastapi", "uvicorn", "alembic")


def loaded_after(*modules: str) -> set[str]:
    """The top-level packages in ``sys.modules`` after importing ``modules``, afresh."""
    code = (
        "import importlib, json, sys\n"
        f"for name in {list(modules)!r}: importlib.import_module(name)\n"
        "print(json.dumps(sorted({m.split('.')[0] for m in sys.modules})))"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    )
    return set(json.loads(result.stdout))


@pytest.mark.parametrize(
    ("process", "body", "own"),
    [
        ("processor", "billing.processor_process", {"processor"}),
        ("controller", "billing.controller_process", {"controller", "alembic"}),
    ],
)
def test_a_role_process_loads_only_its_own_role(process: str, body: str, own: set[str]) -> None:
    loaded = loaded_after("billing.cli.app", "billing.cli.roles", body, f"{process}.worker")
    assert loaded & set(HEAVY) == own


def test_billing_starts_without_any_command_module() -> None:
    loaded = loaded_after("billing.cli.app")
    assert not loaded & set(HEAVY)
    assert not loaded & {"httpx", "rich", "sqlalchemy"}


def test_every_command_is_listed_under_the_module_that_registers_it() -> None:
    """A command missing from ``COMMAND_MODULES`` would silently vanish from ``billing``."""
    for module, names in COMMAND_MODULES.items():
        assert tuple(commands_of(module).commands) == names, module

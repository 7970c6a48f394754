"""Every role definition id in the templates is a built-in role Azure knows."""

from __future__ import annotations

import re

from tests.infra.bicep import BicepFile
from tests.infra.grants import builtin_roles, role_ids_in

GUID = re.compile(r"'([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})'", re.I)


def unknown_role_ids(files: list[BicepFile]) -> list[str]:
    known = builtin_roles()
    return [
        f"{file.relative()}:{number}: {guid} is not a known built-in role"
        for file in files
        for number, line in enumerate(file.lines, start=1)
        for guid in GUID.findall(line)
        if guid.lower() not in known
    ]


def test_every_role_id_is_a_known_built_in_role(infra_files: list[BicepFile]) -> None:
    problems = unknown_role_ids(infra_files)
    assert not problems, "\n".join(problems)


def test_every_role_assignment_names_a_role_definition(infra_files: list[BicepFile]) -> None:
    found = role_ids_in(infra_files)
    assert found, "no role assignment found"
    for file, symbol, expression in found:
        call = expression["function"]
        assert call["type"] == "subscription_resource_id", (file.relative(), symbol)
        assert call["parameters"]["resource_type"] == "Microsoft.Authorization/roleDefinitions"


def test_a_made_up_role_id_fails(infra_files: list[BicepFile]) -> None:
    main = next(f for f in infra_files if f.path.name == "main.bicep")
    text = "\n".join(main.lines).replace(
        "ba92f5b4-2d11-453d-a403-e96b0029c9fe", "ba92f5b4-2d11-453d-a403-e96b0029c9ff", 1
    )
    problems = unknown_role_ids([BicepFile.parse(main.path, text)])
    assert problems == [
        f"infra/main.bicep:{_line_of(text, 'ba92f5b4')}: "
        "ba92f5b4-2d11-453d-a403-e96b0029c9ff is not a known built-in role"
    ]


def _line_of(text: str, needle: str) -> int:
    return next(n for n, line in enumerate(text.splitlines(), start=1) if needle in line)

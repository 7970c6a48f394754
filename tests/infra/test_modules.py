"""Every module call passes parameters its module declares, and every required one."""

from __future__ import annotations

from pathlib import Path

from tests.infra.bicep import INFRA_DIR, BicepFile, unwrap


def module_problems(file: BicepFile) -> list[str]:
    problems = []
    for symbol, module in file.modules.items():
        where = f"{file.relative()}:{module['__start_line__']}: module {symbol}"
        if module["type"] != "local":
            problems.append(f"{where}: not a local module ({module['type']}), cannot be checked")
            continue
        target = BicepFile.parse(Path(file.path.parent, module["detail"]["path"]))
        body, _ = unwrap(module["config"])
        passed = set(body.get("params", {}))
        declared = target.parameters
        required = {name for name, p in declared.items() if p.get("default") is None}
        for name in sorted(passed - set(declared)):
            problems.append(f"{where}: passes {name}, which {target.relative()} does not declare")
        for name in sorted(required - passed):
            problems.append(f"{where}: does not pass {name}, which {target.relative()} requires")
    return problems


def test_every_module_call_matches_its_parameters(infra_files: list[BicepFile]) -> None:
    problems = [p for file in infra_files for p in module_problems(file)]
    assert not problems, "\n".join(problems)


def test_an_unknown_and_a_missing_parameter_fail() -> None:
    path = INFRA_DIR / "main.bicep"
    source = path.read_text(encoding="utf-8")
    old = "    partitions: partitions\n  }\n}\n\nmodule servicebus"
    assert old in source
    text = source.replace(old, "    partitons: partitions\n  }\n}\n\nmodule servicebus")
    problems = module_problems(BicepFile.parse(path, text))
    assert any("module storage: passes partitons" in p for p in problems), problems
    assert any("module storage: does not pass partitions" in p for p in problems), problems

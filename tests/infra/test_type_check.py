"""``infra/`` against the published Azure type definitions, as ``bicep build`` would check it.

The templates must pass, and deliberate errors in a copy of a template must fail, each
naming its file, line and property path.
"""

from __future__ import annotations

import pytest

from tests.infra.bicep import INFRA_DIR, BicepFile
from tests.infra.type_check import Problem, TypeChecker, check_files


def test_every_resource_body_matches_its_type_definition(infra_files: list[BicepFile]) -> None:
    problems = list(check_files(infra_files))
    assert not problems, "\n".join(map(str, problems))


def test_no_preview_api_version(infra_files: list[BicepFile]) -> None:
    preview = [
        f"{file.relative()}: {symbol} {resource['type']}@{resource['api_version']}"
        for file in infra_files
        for symbol, resource in file.resources.items()
        if "preview" in resource["api_version"]
    ]
    assert not preview, preview


def mutated(relative: str, old: str, new: str) -> tuple[BicepFile, list[str]]:
    path = INFRA_DIR / relative
    source = path.read_text(encoding="utf-8")
    assert source.count(old) >= 1, f"{old!r} is not in {relative}: update the test"
    text = source.replace(old, new, 1)
    return BicepFile.parse(path, text), text.splitlines()


@pytest.mark.parametrize(
    ("relative", "old", "new", "path", "message", "on_line"),
    [
        pytest.param(
            "modules/app.bicep",
            "Microsoft.App/containerApps@2025-07-01' = {",
            "Microsoft.App/containerApps@2024-03-01' = {",
            "app.properties.template.scale.rules (var queueRules)[].azureQueue.identity",
            "unknown property",
            "identity: identityId",
            id="scale-rule-identity-at-2024-03-01",
        ),
        pytest.param(
            "modules/storage.bicep",
            "allowSharedKeyAccess: false",
            "allowSharedKeyAcess: false",
            "account.properties.allowSharedKeyAcess",
            "unknown property",
            "allowSharedKeyAcess",
            id="misspelt-property",
        ),
        pytest.param(
            "modules/servicebus.bicep",
            "filterType: 'CorrelationFilter'",
            "filterType: 'CorelationFilter'",
            "priorityRules.properties.filterType",
            "'CorelationFilter' is not one of 'SqlFilter', 'CorrelationFilter'",
            "CorelationFilter",
            id="string-outside-allowed-values",
        ),
        pytest.param(
            "modules/postgres.bicep",
            "properties: { startIpAddress: '0.0.0.0', endIpAddress: '0.0.0.0' }",
            "properties: { endIpAddress: '0.0.0.0' }",
            "allowAzure.properties.startIpAddress",
            "required property is missing",
            "endIpAddress: '0.0.0.0'",
            id="required-property-missing",
        ),
        pytest.param(
            "modules/registry.bicep",
            "anonymousPullEnabled: false",
            "anonymousPullEnabled: false\n    loginServer: 'cr.example.io'",
            "registry.properties.loginServer",
            "read-only property is set",
            "loginServer: 'cr.example.io'",
            id="read-only-property-set",
        ),
        pytest.param(
            "modules/app.bicep",
            "type: 'Readiness'",
            "type: 'Ready'",
            "app.properties.template.containers[0].probes (var probes)[1].type",
            "'Ready' is not one of 'Liveness', 'Readiness', 'Startup'",
            "type: 'Ready'",
            id="probe-type-typo-in-a-variable",
        ),
        pytest.param(
            "modules/storage-container-access.bicep",
            "blobServices/containers@2025-01-01' existing",
            "blobServices/containers@2025-01-31' existing",
            "container",
            "no type definition for Microsoft.Storage/storageAccounts/blobServices/containers"
            "@2025-01-31",
            "containers@2025-01-31",
            id="unknown-api-version-of-an-existing-scope",
        ),
        pytest.param(
            "modules/identity.bicep",
            "userAssignedIdentities@2024-11-30",
            "userAssignedIdentities@2024-11-31",
            "identity",
            "no type definition for Microsoft.ManagedIdentity/userAssignedIdentities@2024-11-31",
            "userAssignedIdentities@2024-11-31",
            id="unknown-api-version",
        ),
    ],
)
def test_a_deliberate_error_fails_with_file_line_and_path(
    relative: str, old: str, new: str, path: str, message: str, on_line: str
) -> None:
    file, lines = mutated(relative, old, new)
    problems = TypeChecker().check(file)
    matching = [p for p in problems if p.path == path and message in p.message]
    assert matching, "\n".join(map(str, problems)) or "no problem found"
    problem: Problem = matching[0]
    assert problem.file == f"infra/{relative}"
    assert on_line in lines[problem.line - 1], str(problem)
    assert str(problem).startswith(f"infra/{relative}:{problem.line}: {path}: ")


def test_the_untouched_template_of_each_mutation_passes() -> None:
    """So the failures above come from the mutations, not from the templates."""
    for relative in (
        "app",
        "storage",
        "storage-container-access",
        "servicebus",
        "postgres",
        "registry",
        "identity",
    ):
        file = BicepFile.parse(INFRA_DIR / "modules" / f"{relative}.bicep")
        assert TypeChecker().check(file) == []

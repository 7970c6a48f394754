"""The azd hooks' own logic (the parts that do not need a subscription)."""

from __future__ import annotations

import base64
import importlib.util
import json
from types import ModuleType

import pytest

from tests.infra.bicep import INFRA_DIR


def load_hook(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, INFRA_DIR / "hooks" / f"{name}.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def jwt(claims: dict[str, str]) -> str:
    def part(data: dict[str, str]) -> str:
        return base64.urlsafe_b64encode(json.dumps(data).encode()).rstrip(b"=").decode()

    return f"{part({'alg': 'none'})}.{part(claims)}.signature"


def test_the_principal_is_named_from_the_token_claims() -> None:
    hook = load_hook("preprovision")
    user = hook.token_claims(jwt({"upn": "ana@contoso.com", "oid": "1"}))
    assert hook.principal_from_claims(user) == ("ana@contoso.com", "User")
    pipeline = hook.token_claims(jwt({"appid": "app-123", "oid": "2", "idtyp": "app"}))
    assert hook.principal_from_claims(pipeline) == ("app-123", "ServicePrincipal")


def test_the_postprovision_hook_signs_in_without_a_password(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    hook = load_hook("postprovision")
    monkeypatch.setenv("AZURE_PRINCIPAL_NAME", "ana@contoso.com")
    monkeypatch.setenv("BILLING_WAREHOUSE_HOST", "psql-x.postgres.database.azure.com")
    url = hook.warehouse_url("billing")
    assert url == (
        "postgresql+psycopg://ana%40contoso.com@psql-x.postgres.database.azure.com:5432/billing"
        "?sslmode=require"
    )

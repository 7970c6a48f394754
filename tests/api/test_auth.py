"""Every route but the probes (/healthz, /readyz) needs ``Authorization: Bearer <key>``;
no key, no start."""

from __future__ import annotations

import pytest

from initiator.app import create_app
from initiator.auth import ApiKeys, MissingApiKeysError
from tests.api.batch_files import csv_file, rows
from tests.api.conftest import SettingsFactory
from tests.api.harness import API_KEY, SECOND_KEY, Api, started_api

pytestmark = pytest.mark.anyio

PROTECTED = [
    ("POST", "/batches"),
    ("GET", "/batches/20250101-000000-000000000000"),
    ("GET", "/pricebook"),
    ("GET", "/openapi.json"),
]
BAD_HEADERS = {
    "no header": {},
    "wrong key": {"Authorization": "Bearer not-the-key"},
    "empty bearer": {"Authorization": "Bearer "},
    "basic scheme": {"Authorization": f"Basic {API_KEY}"},
    "key without scheme": {"Authorization": API_KEY},
}


@pytest.fixture
def backend() -> str:
    """Authentication does not depend on the storage backend."""
    return "embedded"


async def test_healthz_is_open(api: Api) -> None:
    response = await api.client.get("/healthz")
    assert response.status_code == 200
    assert response.json() == {"status": "ok"}


@pytest.mark.parametrize(("method", "path"), PROTECTED)
@pytest.mark.parametrize("headers", BAD_HEADERS.values(), ids=BAD_HEADERS.keys())
async def test_protected_route_answers_401_without_a_valid_key(
    api: Api, method: str, path: str, headers: dict[str, str]
) -> None:
    response = await api.client.request(method, path, headers=headers, content=b"")
    assert response.status_code == 401
    assert response.headers["www-authenticate"] == "Bearer"


@pytest.mark.parametrize("key", [API_KEY, SECOND_KEY])
async def test_every_configured_key_is_accepted(api: Api, key: str) -> None:
    headers = {"Authorization": f"Bearer {key}", "Content-Type": "text/csv"}
    assert (await api.client.get("/pricebook", headers=headers)).status_code == 200
    assert (await api.client.get("/openapi.json", headers=headers)).json()["paths"]["/batches"]
    response = await api.client.post("/batches", content=csv_file(rows(3)), headers=headers)
    assert response.status_code == 202


def test_the_app_refuses_to_start_without_a_key(make_settings: SettingsFactory) -> None:
    with pytest.raises(MissingApiKeysError, match="BILLING_API_KEYS"):
        create_app(make_settings(api_keys=[]))


async def test_insecure_local_starts_without_a_key_and_is_open(
    make_settings: SettingsFactory,
) -> None:
    async with started_api(make_settings(api_keys=[], insecure_local=True)) as api:
        response = await api.client.get("/pricebook")
        assert response.status_code == 200


async def test_insecure_local_with_keys_still_checks_them(make_settings: SettingsFactory) -> None:
    async with started_api(make_settings(insecure_local=True)) as api:
        assert (await api.client.get("/pricebook")).status_code == 401


def test_key_comparison() -> None:
    from pydantic import SecretStr

    keys = ApiKeys([SecretStr("alpha"), SecretStr("beta-longer-key")])
    assert keys.accepts("alpha")
    assert keys.accepts("beta-longer-key")
    assert not keys.accepts("alph")
    assert not keys.accepts("alpha ")
    assert not keys.accepts("")

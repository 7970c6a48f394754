"""Schemathesis against the running initiator: no 5xx, and every answer as documented.

Every operation of the OpenAPI document is fuzzed with a valid key, without one and with a
wrong one, through uvicorn on a free port, with all of schemathesis's checks and a bounded
number of examples per operation (the run stays around a minute on the 2-core CI machine).

The cases are generated from the document of an app built at import (schemathesis makes
one test per operation while pytest collects, before any server runs); the first test
checks that the running initiator serves exactly that document.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest
import schemathesis
from hypothesis import HealthCheck, settings

from initiator.app import create_app
from shared.settings import Settings
from tests.api.harness import API_KEY
from tests.support.deployment_settings import deployment_values, settings_factory
from tests.support.live_initiator import LiveInitiator, serving

EXAMPLES_PER_OPERATION = 15
VALID_KEY = {"Authorization": f"Bearer {API_KEY}"}
WRONG_KEY = {"Authorization": "Bearer not-a-key"}

DOCUMENT = create_app(Settings(_env_file=None, api_keys=[API_KEY])).openapi()  # type: ignore[call-arg]
# A batch file the schema allows (any text) is still refused for what it holds: a bad line,
# an unknown SKU, a duplicate id. No schema can say "a valid batch", so for this operation
# the content rejections count as an acceptable answer to schema-valid data; likewise an
# upload reference (application/json) naming a blob no grant made (404) or nothing uploaded
# to yet (409). The upload route's grants are signatures no schema can make: any valid
# request without one is refused (403).
CONFIG_TEXT = """
[[operations]]
include-path = "/batches"
include-method = "POST"
checks.positive_data_acceptance.expected-statuses = [
    "2xx", "400", "401", "404", "409", "413", "415", "422"
]
"""
CONFIG_TEXT += """
[[operations]]
include-path = "/uploads/{container}/{blob}"
include-method = "PUT"
checks.positive_data_acceptance.expected-statuses = ["403", "404"]
"""
CONFIG = schemathesis.Config.from_str(CONFIG_TEXT)
schema = schemathesis.openapi.from_dict(DOCUMENT, config=CONFIG)
# With the key given as the scheme's credentials (not forced onto every case), a case that
# leaves the key out on purpose goes out without it and must be refused.
schema_with_key = schemathesis.openapi.from_dict(
    DOCUMENT,
    config=schemathesis.Config.from_str(
        CONFIG_TEXT + f'\n[auth.openapi.HTTPBearer]\nbearer = "{API_KEY}"\n'
    ),
)
bounded = settings(
    max_examples=EXAMPLES_PER_OPERATION, deadline=None, suppress_health_check=list(HealthCheck)
)


@schemathesis.serializer("application/x-ndjson", "application/jsonl")
def _json_lines(_context: schemathesis.SerializationContext, value: Any) -> dict[str, Any]:
    return {"data": value if isinstance(value, bytes) else str(value).encode()}


@schemathesis.serializer("application/gzip")
def _gzip_file(_context: schemathesis.SerializationContext, value: Any) -> dict[str, Any]:
    return {"data": value if isinstance(value, bytes) else str(value).encode()}


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveInitiator]:
    folder = tmp_path_factory.mktemp("schemathesis")
    with serving(settings_factory(deployment_values(folder, api_keys=[API_KEY]))()) as started:
        yield started


def test_the_running_initiator_serves_the_document_under_test(live: LiveInitiator) -> None:
    served = httpx.get(f"{live.base_url}/openapi.json", headers=VALID_KEY)
    assert served.status_code == 200
    assert served.json() == DOCUMENT


@schema_with_key.parametrize()
@bounded
def test_with_a_valid_key(case: schemathesis.Case, live: LiveInitiator) -> None:
    case.call_and_validate(base_url=live.base_url)


@schema.parametrize()
@bounded
def test_without_a_key(case: schemathesis.Case, live: LiveInitiator) -> None:
    case.call_and_validate(base_url=live.base_url)


@schema.parametrize()
@bounded
def test_with_a_wrong_key(case: schemathesis.Case, live: LiveInitiator) -> None:
    case.call_and_validate(base_url=live.base_url, headers=WRONG_KEY)

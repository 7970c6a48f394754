"""The OpenAPI document describes the API as it answers, and its errors share one shape.

Schemathesis (``test_schemathesis.py``) checks answers against the document at large; these
tests pin what FastAPI's generated document alone got wrong: the 401 of every route behind
the key, 422 as our problem details, and the body of ``POST /batches``.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from initiator.schemas import ProblemDetails
from tests.api.harness import API_KEY, AUTH
from tests.support.deployment_settings import deployment_values, settings_factory
from tests.support.live_initiator import LiveInitiator, serving

PROBLEM_REF = "#/components/schemas/ProblemDetails"


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveInitiator]:
    folder = tmp_path_factory.mktemp("openapi")
    settings = settings_factory(deployment_values(folder, api_keys=[API_KEY]))()
    with serving(settings) as started:
        yield started


@pytest.fixture(scope="module")
def document(live: LiveInitiator) -> dict[str, Any]:
    response = httpx.get(f"{live.base_url}/openapi.json", headers=AUTH)
    assert response.status_code == 200
    loaded: dict[str, Any] = response.json()
    return loaded


def operations(document: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    for path, methods in document["paths"].items():
        for method, operation in methods.items():
            yield f"{method.upper()} {path}", operation


def schema_ref(response: dict[str, Any]) -> str | None:
    ref: str | None = response["content"]["application/problem+json"]["schema"].get("$ref")
    return ref


OPERATION_IDS = {
    "GET /healthz": "getHealth",
    "GET /readyz": "getReadiness",
    "POST /batches": "submitBatch",
    "POST /uploads": "grantUpload",
    "PUT /uploads/{container}/{blob}": "putUploadBlock",
    "GET /batches/{batch_id}": "getBatch",
    "GET /batches/{batch_id}/invoices": "getBatchInvoices",
    "GET /pricebook": "getPricebook",
    "POST /control/release": "releaseGate",
    "POST /control/hold": "holdGate",
    "GET /control/gate": "getGate",
    "GET /metrics": "getMetrics",
    "GET /dashboard/data": "getDashboardData",
    "GET /dashboard/live": "getDashboardLive",
}


def test_every_operation_has_a_summary_a_description_and_a_stable_id(
    document: dict[str, Any],
) -> None:
    found = {name: op.get("operationId") for name, op in operations(document)}
    assert found == OPERATION_IDS
    for name, operation in operations(document):
        assert operation.get("summary"), name
        assert len(operation.get("description", "")) > 20, name


def test_closed_values_are_enums(document: dict[str, Any]) -> None:
    schemas = document["components"]["schemas"]
    status = schemas["BatchStatusView"]["properties"]["status"]
    assert schemas[status["$ref"].rsplit("/", 1)[1]]["enum"] == [
        "receiving",
        "accepting",
        "accepted",
        "processing",
        "completed",
        "failed",
        "abandoned",
    ]
    assert schemas["BatchStatusView"]["properties"]["gate"]["enum"] == ["released", "held"]
    priority = schemas["BatchStatusView"]["properties"]["priority"]
    assert set(priority["enum"]) == {"high", "normal", "low"}


def test_every_error_answer_is_documented_as_problem_json(document: dict[str, Any]) -> None:
    for name, operation in operations(document):
        for code, response in operation["responses"].items():
            if code[0] in "45":
                assert list(response["content"]) == ["application/problem+json"], (name, code)


def test_every_route_behind_the_key_documents_its_401_as_a_problem(
    document: dict[str, Any],
) -> None:
    secured = [(name, op) for name, op in operations(document) if op.get("security")]
    assert len(secured) >= 8
    for name, operation in secured:
        assert "401" in operation["responses"], name
        assert schema_ref(operation["responses"]["401"]) == PROBLEM_REF, name
    public = {name for name, op in operations(document) if not op.get("security")}
    # The upload route is authorised by each grant's signature (its holder has no API key).
    assert public == {"GET /healthz", "GET /readyz", "PUT /uploads/{container}/{blob}"}


def test_every_422_is_documented_as_a_problem_not_as_fastapis_model(
    document: dict[str, Any],
) -> None:
    assert "HTTPValidationError" not in json.dumps(document)
    documented_422 = [(n, op) for n, op in operations(document) if "422" in op["responses"]]
    assert documented_422
    for name, operation in documented_422:
        assert schema_ref(operation["responses"]["422"]) == PROBLEM_REF, name


def test_post_batches_documents_its_body(document: dict[str, Any]) -> None:
    body = document["paths"]["/batches"]["post"]["requestBody"]
    assert body["required"] is True
    assert {"text/csv", "application/x-ndjson", "application/gzip"} <= set(body["content"])


@pytest.mark.parametrize(
    ("path", "headers", "status"),
    [
        ("/batches/some-batch", {}, 401),
        ("/batches/some-batch", {"Authorization": "Bearer wrong"}, 401),
        ("/batches/some-batch", AUTH, 404),
        ("/no/such/route", AUTH, 404),
        ("/batches/some-batch/invoices?limit=0", AUTH, 422),
    ],
)
def test_error_answers_are_problem_details(
    live: LiveInitiator, path: str, headers: dict[str, str], status: int
) -> None:
    response = httpx.get(f"{live.base_url}{path}", headers=headers)
    assert response.status_code == status
    assert response.headers["content-type"] == "application/problem+json"
    body = response.json()
    assert set(body) == set(ProblemDetails.model_fields)
    assert ProblemDetails.model_validate(body).status == status
    assert body["type"] == "about:blank" or body["type"].startswith("urn:billing:problem:")
    assert body["title"]


def test_a_rejected_batch_is_a_typed_problem_with_its_lines(live: LiveInitiator) -> None:
    bad = b"transaction_id,customer_id,sku,quantity,region,occurred_at\nt1,c1,SKU-1,0,EU,x\n"
    response = httpx.post(
        f"{live.base_url}/batches", content=bad, headers={**AUTH, "Content-Type": "text/csv"}
    )
    assert response.status_code == 422
    assert response.headers["content-type"] == "application/problem+json"
    body = response.json()
    assert body["type"] == "urn:billing:problem:batch-rejected"
    assert body["status"] == 422
    assert body["detail"]
    assert body["problems"][0]["line"] == 2


def test_the_api_page_and_the_icon_answer_without_third_party_assets(
    live: LiveInitiator,
) -> None:
    page = httpx.get(f"{live.base_url}/docs")
    assert page.status_code == 200
    assert page.headers["content-type"].startswith("text/html")
    assert "https://" not in page.text
    assert "http://" not in page.text
    script = httpx.get(f"{live.base_url}/static/api.js")
    assert script.status_code == 200
    assert "/openapi.json" in script.text
    for icon in ("/favicon.ico", "/favicon.svg"):
        answer = httpx.get(f"{live.base_url}{icon}")
        assert answer.status_code == 200, icon
        assert answer.headers["content-type"] == "image/svg+xml"
    assert httpx.get(f"{live.base_url}/openapi.json").status_code == 401


def test_the_batch_event_a_callback_receives_is_in_the_webhooks_section(
    document: dict[str, Any],
) -> None:
    operation = document["webhooks"]["batch-event"]["post"]
    body = operation["requestBody"]["content"]["application/cloudevents+json"]["schema"]
    assert body == {"$ref": "#/components/schemas/BatchEvent"}
    headers = {p["name"] for p in operation["parameters"] if p["in"] == "header"}
    assert headers == {"webhook-id", "webhook-timestamp", "webhook-signature"}
    event = document["components"]["schemas"]["BatchEvent"]
    assert event["properties"]["type"]["enum"] == [
        "billing.batch.completed",
        "billing.batch.failed",
        "billing.batch.abandoned",
    ]
    # Every reference in the document resolves (no 422 to a model the document dropped).
    references = set(_references(document))
    assert references <= {
        f"#/components/schemas/{name}" for name in document["components"]["schemas"]
    }


def _references(node: Any) -> Iterator[str]:
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "$ref":
                yield value
            else:
                yield from _references(value)
    elif isinstance(node, list):
        for item in node:
            yield from _references(item)

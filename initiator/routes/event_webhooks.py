"""The batch event as the OpenAPI document's ``webhooks``: what a callback receives.

Nothing is served here: the controller sends these requests (controller.events.webhooks)
to a batch's ``callback`` and to ``BILLING_WEBHOOK_URLS``. Declaring them documents the
body (``shared.contracts.batch_event.BatchEvent``, also docs/schemas/batch-event.schema.json)
and the Standard Webhooks headers in the same document as the API (docs/events.md).
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Body, Header, status

from shared.contracts.batch_event import BatchEvent

router = APIRouter(tags=["events"])


@router.post(
    "batch-event",
    status_code=status.HTTP_204_NO_CONTENT,
    responses={
        200: {"description": "Any 2xx: delivered"},
        204: {"description": "Any 2xx: delivered"},
        500: {"description": "Anything else, or no answer: retried on the schedule"},
    },
)
def batch_event(
    event: Annotated[BatchEvent, Body(media_type="application/cloudevents+json")],
    webhook_id: Annotated[str, Header(description="the event id, the same on every attempt")],
    webhook_timestamp: Annotated[str, Header(description="the attempt's time, Unix seconds")],
    webhook_signature: Annotated[
        str, Header(description="v1,<base64 HMAC-SHA256 of id.timestamp.body> (whsec_ key)")
    ],
) -> None:
    """A batch reached a final state: one event per outcome, at least once, same id."""

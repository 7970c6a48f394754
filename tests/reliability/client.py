"""A client that submits a batch the way a careful real one would, and remembers every answer.

It sends the file with an ``Idempotency-Key`` and, on a 5xx, a 409 "still being accepted" or
a dropped connection, sends the same bytes with the same key again after the answer's
``Retry-After`` (capped, so a test does not idle), until it gets a 202 or a 200, or gives up.
"""

from __future__ import annotations

import time
import uuid
from dataclasses import dataclass, field
from typing import Any

import httpx

#: The longest a test client waits before a retry, whatever ``Retry-After`` asks.
MAX_RETRY_WAIT_SECONDS = 0.5
MAX_ATTEMPTS = 30


@dataclass
class Submission:
    """One batch file's trip: every status the client got, and the batch it ended with."""

    name: str
    key: str = field(default_factory=lambda: f"reliability-{uuid.uuid4()}")
    answers: list[int | str] = field(default_factory=list)  # a status, or "disconnected"
    accepted: dict[str, Any] | None = None

    @property
    def batch_id(self) -> str:
        assert self.accepted is not None, f"{self.name}: never accepted: {self.answers}"
        return str(self.accepted["batch_id"])

    @property
    def replayed_after_an_error(self) -> bool:
        """Its first success named a batch an earlier attempt had made (200, a replay),
        although that earlier attempt was answered with an error: told "not accepted" (or
        any 5xx) for a batch that went on to be processed."""
        *before, last = self.answers or [None]
        return last == 200 and any(isinstance(answer, int) for answer in before)


def submit(
    client: httpx.Client, name: str, body: bytes, *, priority: str, headers: dict[str, str]
) -> Submission:
    submission = Submission(name)
    for _ in range(MAX_ATTEMPTS):
        try:
            response = client.post(
                "/batches",
                content=body,
                params={"priority": priority},
                headers={**headers, "Idempotency-Key": submission.key},
            )
        except httpx.TransportError:
            submission.answers.append("disconnected")
            time.sleep(MAX_RETRY_WAIT_SECONDS)
            continue
        submission.answers.append(response.status_code)
        if response.status_code in (200, 202):
            submission.accepted = response.json()
            return submission
        if response.status_code < 500 and response.status_code != 409:
            raise AssertionError(f"{name}: {response.status_code} {response.text}")
        time.sleep(min(float(response.headers.get("Retry-After", "1")), MAX_RETRY_WAIT_SECONDS))
    raise AssertionError(f"{name}: not accepted in {MAX_ATTEMPTS} attempts: {submission.answers}")


def wait_until_closed(
    client: httpx.Client, batch_id: str, *, timeout: float
) -> tuple[dict[str, Any], int]:
    """Poll ``GET /batches/{id}`` until completed or failed; the status and how many polls
    were answered with an error (storage trouble: the client just asks again)."""
    deadline = time.monotonic() + timeout
    status: dict[str, Any] = {}
    errors = 0
    while time.monotonic() < deadline:
        response = client.get(f"/batches/{batch_id}")
        if response.status_code == 200:
            status = response.json()
            if status["status"] in ("completed", "failed"):
                return status, errors
        else:
            assert response.status_code == 503, response.text
            errors += 1
        time.sleep(0.2)
    raise AssertionError(f"batch {batch_id} not closed within {timeout:.0f} s: {status}")

"""API-key authentication: ``Authorization: Bearer <key>`` on every route but the health check.

Several keys may be valid at once (rotate by adding the new key, then removing the old).
The presented key is compared with *every* configured key, each through sha256 and
``secrets.compare_digest``, so the time taken reveals neither which key matched nor how
long the keys are.
"""

from __future__ import annotations

import hashlib
import logging
import secrets
from collections.abc import Sequence

from fastapi import Depends, HTTPException, Request, status
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from pydantic import SecretStr

from shared.settings import Settings

log = logging.getLogger(__name__)

bearer_scheme = HTTPBearer(auto_error=False, description="An API key from BILLING_API_KEYS")


class MissingApiKeysError(RuntimeError):
    """The initiator will not serve without an API key unless told it is insecure-local."""

    def __init__(self) -> None:
        super().__init__(
            "no API key configured: set BILLING_API_KEYS (comma-separated), or start with "
            "--insecure-local (BILLING_INSECURE_LOCAL=true) for local development only"
        )


class ApiKeys:
    """The configured keys, kept only as sha256 digests."""

    def __init__(self, keys: Sequence[SecretStr]) -> None:
        self._digests = [_digest(key.get_secret_value()) for key in keys if key.get_secret_value()]

    @classmethod
    def from_settings(cls, settings: Settings) -> ApiKeys:
        keys = cls(settings.api_keys)
        if not keys.configured:
            if not settings.insecure_local:
                raise MissingApiKeysError()
            log.warning("no API key configured and insecure-local set: the API is open to anyone")
        return keys

    @property
    def configured(self) -> bool:
        return bool(self._digests)

    def accepts(self, presented: str) -> bool:
        digest = _digest(presented)
        matched = False
        for known in self._digests:  # no early exit: every key is compared
            matched |= secrets.compare_digest(digest, known)
        return matched


def _digest(key: str) -> bytes:
    return hashlib.sha256(key.encode()).digest()


def require_api_key(
    request: Request,
    credentials: HTTPAuthorizationCredentials | None = Depends(bearer_scheme),
) -> None:
    """FastAPI dependency: 401 with ``WWW-Authenticate: Bearer`` unless a valid key is sent."""
    keys: ApiKeys = request.app.state.api_keys
    if not keys.configured:  # insecure-local, checked at start
        return
    if credentials is None or not keys.accepts(credentials.credentials):
        raise HTTPException(
            status.HTTP_401_UNAUTHORIZED,
            detail="a valid API key is required: send 'Authorization: Bearer <key>'",
            headers={"WWW-Authenticate": "Bearer"},
        )


def sender_of(request: Request) -> str:
    """Who sends this request, for sharing intake fairly: a digest of its API key, or its
    client address where the API runs without keys."""
    scheme, _, token = request.headers.get("authorization", "").partition(" ")
    if scheme.lower() == "bearer" and token:
        return "key:" + hashlib.sha256(token.encode()).hexdigest()[:16]
    return "address:" + (request.client.host if request.client else "unknown")

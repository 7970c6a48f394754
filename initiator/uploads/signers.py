"""The URL of an upload grant: where the sender may write one blob, until when.

Three signers, one per way the initiator reaches storage:

* an account URL (Azure, managed identity): a **user delegation SAS**, signed with a key the
  initiator asks Entra-authenticated storage for (``get_user_delegation_key``), so no
  account key exists anywhere; the key is cached and renewed well before it expires;
* a connection string with an account key (Azurite, or a key-based account): an
  **account-key SAS**;
* the embedded backend: the initiator's own route (:mod:`.local_route`) with an HMAC token
  in the same query parameters a SAS uses (``se``, ``sp``, ``sr``, ``sig``), so that the
  Azure SDK's ``BlobClient.from_blob_url`` speaks to it as to a blob.

Every grant allows create and write on one blob only (``sp=cw``, ``sr=b``): no read, list
or delete, and no other blob.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import os
import secrets
import threading
from datetime import datetime, timedelta
from pathlib import Path
from typing import Protocol
from urllib.parse import quote, urlencode

from azure.storage.blob import (
    BlobSasPermissions,
    BlobServiceClient,
    UserDelegationKey,
    generate_blob_sas,
)

from shared import meter
from shared.contracts.batch_records import utc_now
from shared.settings import Settings

#: create + write: the sender makes the blob and its blocks, nothing else.
PERMISSION = "cw"
#: The embedded route's path; its URL is ``<base>/uploads/<container>/<blob>?…``.
LOCAL_ROUTE = "/uploads"
#: A delegation key serves this long, and is renewed once less than a grant's life is left.
DELEGATION_KEY_LIFETIME = timedelta(hours=6)
#: Clock skew between the initiator and storage: a grant starts this far in the past.
CLOCK_SKEW = timedelta(minutes=5)


class UploadSigner(Protocol):
    def url(self, container: str, blob: str, expires_at: datetime) -> str:
        """A URL that lets its holder create and write ``blob`` until ``expires_at``."""
        ...


class AccountKeySigner:
    """Account-key SAS (Azurite's well-known key, or a key-based account)."""

    def __init__(self, service: BlobServiceClient) -> None:
        credential = service.credential
        self._endpoint = service.url.rstrip("/")
        self._account = credential.account_name
        self._key = credential.account_key

    def url(self, container: str, blob: str, expires_at: datetime) -> str:
        token = generate_blob_sas(
            self._account,
            container,
            blob,
            account_key=self._key,
            permission=BlobSasPermissions(create=True, write=True),
            expiry=expires_at,
            start=utc_now() - CLOCK_SKEW,
        )
        return f"{self._endpoint}/{container}/{quote(blob)}?{token}"


class UserDelegationSigner:
    """User delegation SAS, signed with a key storage hands the initiator's identity."""

    def __init__(self, service: BlobServiceClient) -> None:
        self._service = service
        self._key: UserDelegationKey | None = None
        self._key_expiry = utc_now()
        self._lock = threading.Lock()

    def url(self, container: str, blob: str, expires_at: datetime) -> str:
        token = generate_blob_sas(
            self._service.account_name or "",
            container,
            blob,
            user_delegation_key=self._delegation_key(expires_at),
            permission=BlobSasPermissions(create=True, write=True),
            expiry=expires_at,
            start=utc_now() - CLOCK_SKEW,
            protocol="https",
        )
        return f"{self._service.url.rstrip('/')}/{container}/{quote(blob)}?{token}"

    def _delegation_key(self, expires_at: datetime) -> UserDelegationKey:
        """A key valid past ``expires_at`` (a SAS dies with its key): one request per
        :data:`DELEGATION_KEY_LIFETIME`, not one per grant."""
        with self._lock:
            if self._key is None or self._key_expiry < expires_at:
                start = utc_now() - CLOCK_SKEW
                expiry = max(expires_at, utc_now() + DELEGATION_KEY_LIFETIME)
                meter.record("blob", "delegation-key", container=meter.ACCOUNT)
                self._key = self._service.get_user_delegation_key(start, expiry)
                self._key_expiry = expiry
            return self._key


class LocalSigner:
    """The embedded backend's grants: an HMAC over container, blob, expiry and permission,
    with a key kept in the data folder (shared by every initiator on that folder)."""

    def __init__(self, key: bytes, base_url: str | None) -> None:
        self._key = key
        self._base = (base_url or "").rstrip("/")

    @classmethod
    def in_folder(cls, data_dir: Path, base_url: str | None) -> LocalSigner:
        return cls(signing_key(data_dir / "storage" / "upload-signing.key"), base_url)

    def url(self, container: str, blob: str, expires_at: datetime) -> str:
        query = self.query(container, blob, expires_at)
        return f"{self._base}{LOCAL_ROUTE}/{container}/{quote(blob)}?{urlencode(query)}"

    def query(self, container: str, blob: str, expires_at: datetime) -> dict[str, str]:
        se = _sas_time(expires_at)
        return {"se": se, "sp": PERMISSION, "sr": "b", "sig": self._sign(container, blob, se)}

    def verify(self, container: str, blob: str, se: str, sp: str, sig: str) -> str | None:
        """Why the grant does not allow a write now, or None if it does."""
        expected = self._sign(container, blob, se)
        if sp != PERMISSION or not hmac.compare_digest(expected, sig):
            return "the signature does not match"
        try:
            expiry = datetime.fromisoformat(se.replace("Z", "+00:00"))
        except ValueError:
            return f"unreadable expiry {se!r}"
        if expiry <= utc_now():
            return f"the grant expired at {se}"
        return None

    def _sign(self, container: str, blob: str, se: str) -> str:
        message = "\n".join((container, blob, se, PERMISSION)).encode()
        digest = hmac.new(self._key, message, hashlib.sha256).digest()
        return base64.b64encode(digest).decode()


def signer_for(settings: Settings) -> UploadSigner:
    """The signer that matches how the settings reach storage."""
    if settings.storage_connection_string is not None:
        secret = settings.storage_connection_string.get_secret_value()
        return AccountKeySigner(BlobServiceClient.from_connection_string(secret))
    if settings.storage_account_url:
        from azure.identity import DefaultAzureCredential

        from shared.storage.azure.account import service_endpoints

        endpoint = service_endpoints(settings.storage_account_url)["blob"]
        return UserDelegationSigner(BlobServiceClient(endpoint, DefaultAzureCredential()))
    return LocalSigner.in_folder(settings.data_dir, settings.public_base_url)


def signing_key(path: Path) -> bytes:
    """The key in ``path``, made on first use. Written aside then linked into place, so
    concurrent starts agree on one key and none reads a half-written file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if not path.exists():
        draft = path.with_name(f"{path.name}.{secrets.token_hex(8)}")
        draft.write_bytes(secrets.token_bytes(32))
        try:
            os.link(draft, path)
        except FileExistsError:
            pass  # another process linked its key first: use that one
        finally:
            draft.unlink()
    return path.read_bytes()


def _sas_time(moment: datetime) -> str:
    return f"{moment:%Y-%m-%dT%H:%M:%SZ}"

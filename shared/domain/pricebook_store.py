"""Pricebook versions in the control container, and which one is current.

Layout (control container):

* ``pricebooks/<version>.json``: one validated pricebook in canonical JSON. The version is
  its content hash (:meth:`Pricebook.version_hash`), so a version never changes once written
  and can be cached forever by everyone who pins it (every batch does, at acceptance).
* ``pricebooks/current``: the version that new batches pin, as plain text. It is only ever
  replaced with ``If-Match`` on the ETag that was read, so two concurrent uploads cannot
  interleave a read and a write; the first start installs the sample with ``create_only``.
"""

from __future__ import annotations

import contextlib
import logging
import threading

from azure.core.exceptions import (
    ResourceExistsError,
    ResourceModifiedError,
    ResourceNotFoundError,
)

from shared.domain.pricebook import Pricebook, PricebookError, document_version, load_pricebook
from shared.storage.ports import BlobContainer

PREFIX = "pricebooks/"
CURRENT_BLOB = f"{PREFIX}current"
_POINTER_RETRIES = 10

log = logging.getLogger(__name__)


class NoPricebookError(LookupError):
    """No pricebook is installed yet (the initiator installs the sample at first start)."""


def version_blob(version: str) -> str:
    return f"{PREFIX}{version}.json"


class PricebookStore:
    """Upload, look up and pin pricebooks. Thread-safe; versions are cached once read."""

    def __init__(self, container: BlobContainer) -> None:
        self._container = container
        self._cache: dict[str, Pricebook] = {}
        self._lock = threading.Lock()

    def upload(self, document: bytes) -> str:
        """Validate ``document``, store it as a version and make it current. Returns the version.

        Raises :class:`~shared.domain.pricebook.PricebookError` (every problem, with its JSON path)
        before anything is written.
        """
        pricebook = load_pricebook(document)
        version = self._store_version(pricebook)
        self._point_current_at(version)
        log.info("pricebook %s is now current", version)
        return version

    def install_if_missing(self, pricebook: Pricebook) -> bool:
        """Make ``pricebook`` current unless some pricebook already is. True if installed."""
        version = self._store_version(pricebook)
        try:
            self._container.put(CURRENT_BLOB, version.encode(), create_only=True)
        except ResourceExistsError:
            return False
        log.info("installed pricebook %s as current", version)
        return True

    def current_version(self) -> str:
        """The version new batches pin now. Read every time: another process may upload."""
        try:
            return self._container.get(CURRENT_BLOB).data.decode().strip()
        except ResourceNotFoundError:
            raise NoPricebookError("no pricebook installed; upload one first") from None

    def current(self) -> tuple[str, Pricebook]:
        version = self.current_version()
        return version, self.get(version)

    def get(self, version: str) -> Pricebook:
        """The pricebook of ``version``; ``KeyError`` if no such version was ever stored."""
        with self._lock:
            cached = self._cache.get(version)
        if cached is not None:
            return cached
        try:
            document = self._container.get(version_blob(version)).data
        except ResourceNotFoundError:
            raise KeyError(f"no pricebook version {version!r}") from None
        pricebook = load_pricebook(document)
        # Versions are stored as canonical JSON, so their bytes hash to the version; only
        # a document spelled otherwise is written again to be checked (0.4 s for 5,000 SKUs).
        if document_version(document) != version and pricebook.version_hash() != version:
            raise PricebookError([f"stored pricebook {version!r} does not match its hash"])
        with self._lock:
            self._cache[version] = pricebook
        return pricebook

    def _store_version(self, pricebook: Pricebook) -> str:
        # The canonical JSON is written once (30 ms for 5,000 SKUs) and hashed for the version.
        document = pricebook.to_json()
        version = document_version(document)
        # Content-addressed: if the version exists it is byte-for-byte this one.
        with contextlib.suppress(ResourceExistsError):
            self._container.put(version_blob(version), document, create_only=True)
        with self._lock:
            self._cache[version] = pricebook
        return version

    def _point_current_at(self, version: str) -> None:
        for _ in range(_POINTER_RETRIES):
            try:
                etag = self._container.head(CURRENT_BLOB).etag
            except ResourceNotFoundError:
                try:
                    self._container.put(CURRENT_BLOB, version.encode(), create_only=True)
                    return
                except ResourceExistsError:
                    continue  # someone installed one meanwhile: read it and replace it
            try:
                self._container.put(CURRENT_BLOB, version.encode(), if_match=etag)
                return
            except (ResourceModifiedError, ResourceNotFoundError):
                continue  # a concurrent upload moved the pointer: read it again
        raise ResourceModifiedError(
            f"could not move {CURRENT_BLOB} after {_POINTER_RETRIES} attempts"
        )

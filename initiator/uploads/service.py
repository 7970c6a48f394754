"""What the upload routes use, built once at start-up: the grant issuer and the intake."""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from datetime import datetime, timedelta

from initiator.acceptance import BatchAcceptance
from initiator.idempotency import IdempotencyKeys
from initiator.uploads.intake import UploadIntake
from initiator.uploads.ledger import UploadLedger
from initiator.uploads.signers import LocalSigner, UploadSigner, signer_for
from shared.contracts.batch_records import BatchRecords, utc_now
from shared.settings import Settings
from shared.storage.ports import BlobContainer, StorageAccount


@dataclass(frozen=True)
class Grant:
    upload_url: str
    blob: str
    expires_at: datetime


@dataclass(frozen=True)
class Uploads:
    settings: Settings
    container: BlobContainer
    ledger: UploadLedger
    signer: UploadSigner
    intake: UploadIntake

    @classmethod
    def open(
        cls, storage: StorageAccount, settings: Settings, acceptance: BatchAcceptance
    ) -> Uploads:
        container = storage.container(settings.upload_container)
        table = storage.table(settings.batches_table)
        ledger = UploadLedger(table)
        intake = UploadIntake(
            container, ledger, acceptance, IdempotencyKeys(table), BatchRecords(table), settings
        )
        return cls(settings, container, ledger, signer_for(settings), intake)

    @property
    def local(self) -> LocalSigner | None:
        """The embedded backend's signer, whose grants the initiator's own route serves."""
        return self.signer if isinstance(self.signer, LocalSigner) else None

    def grant(self) -> Grant:
        """A new single-use blob name, recorded, and a write-only URL for it."""
        expires_at = (utc_now() + timedelta(seconds=self.settings.upload_expiry_seconds)).replace(
            microsecond=0
        )
        blob = f"{utc_now():%Y%m%d-%H%M%S}-{secrets.token_hex(16)}"
        self.ledger.issue(blob, expires_at)
        return Grant(self.signer.url(self.container.name, blob, expires_at), blob, expires_at)

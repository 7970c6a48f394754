"""``POST /uploads``: a short-lived, write-only grant to upload one batch file to storage.

The sender uploads the file with any tool (AzCopy, the SDK, ``curl -T``), in blocks, in
parallel, resuming after a failure, without an HTTP request held open through the
initiator; then ``POST /batches`` with ``{"upload": blob}`` (docs/uploads.md).
"""

from __future__ import annotations

from typing import Any

import anyio.to_thread
from fastapi import APIRouter, Depends, status

from initiator.auth import require_api_key
from initiator.dependencies import Services, get_services
from initiator.schemas import ProblemDetails, UploadGrant

router = APIRouter(tags=["uploads"], dependencies=[Depends(require_api_key)])


@router.post(
    "/uploads",
    status_code=status.HTTP_201_CREATED,
    operation_id="grantUpload",
    summary="Get a URL to upload a batch file to",
    response_model=UploadGrant,
    responses={503: {"model": ProblemDetails}},
)
async def grant_upload(services: Services = Depends(get_services)) -> Any:
    """A write-only URL for one new blob of the ``incoming`` container, valid for
    ``BILLING_UPLOAD_EXPIRY_SECONDS``: a SAS (create and write, that blob only) on Azure
    storage, the initiator's own upload route on the embedded backend. Upload the file
    there, then ``POST /batches`` with ``{"upload": blob}``. A blob name is taken by one
    batch only."""
    grant = await anyio.to_thread.run_sync(services.uploads.grant)
    return UploadGrant(upload_url=grant.upload_url, blob=grant.blob, expires_at=grant.expires_at)

"""``POST /batches`` naming an upload: ``Content-Type: application/json``, ``{"upload": …}``.

No batch file is JSON (JSON Lines has its own types), so the media type alone tells a
reference from a file, before a byte is read. The reference is small: its body is read
whole, up to :data:`MAX_REFERENCE_BYTES`.
"""

from __future__ import annotations

from fastapi import Request
from fastapi.exceptions import RequestValidationError
from pydantic import ValidationError

from initiator.schemas import UploadReference

MAX_REFERENCE_BYTES = 4096


def names_an_upload(content_type: str | None) -> bool:
    media_type = (content_type or "").split(";")[0].strip().lower()
    return media_type == "application/json"


async def read_reference(request: Request) -> UploadReference:
    """The request's ``{"upload": …}``; 422 (the API's invalid-parameters problem) if it is
    not one."""
    data = bytearray()
    async for part in request.stream():
        data += part
        if len(data) > MAX_REFERENCE_BYTES:
            raise RequestValidationError(
                [{"loc": ("body",), "msg": "an upload reference is at most 4 KiB"}]
            )
    try:
        return UploadReference.model_validate_json(bytes(data))
    except ValidationError as invalid:
        raise RequestValidationError(invalid.errors()) from None

"""The embedded backend's upload route: the part of Azure's Blob REST API an upload uses.

On Azure storage the sender writes to the blob service with a SAS. The embedded backend has
no blob service, so the initiator serves the same requests for the ``incoming`` container
at ``/uploads/<container>/<blob>``, authorised by the grant's HMAC (the SAS query
parameters ``se``, ``sp``, ``sr``, ``sig``), and the same client code works on every
backend (the Azure SDK's ``BlobClient.from_blob_url``, ``curl -T``):

* ``PUT ?comp=block&blockid=<base64>``: Put Block (a block of at most
  :data:`MAX_BLOCK_BYTES`, spooled to a temporary file as it arrives and staged from
  there; the id is any bytes, as on Azure, and is stored in its base64 form);
* ``PUT ?comp=blocklist`` with ``<BlockList><Latest>id</Latest>…</BlockList>``: Put Block
  List (the blob is then the staged blocks, in that order);
* ``PUT`` with the whole file as the body: Put Blob, spooled and stored block by block as
  it arrives;
* ``GET``/``HEAD``: refused (403 ``AuthorizationPermissionMismatch``), as storage refuses
  any read to a write-only SAS.

Errors answer as Azure's do (status and ``x-ms-error-code``), with a problem body.
A grant that expired, or whose upload a batch took already, writes nothing (403).
"""

from __future__ import annotations

import base64
import binascii
import email.utils
import tempfile
import xml.etree.ElementTree as ElementTree
from collections.abc import AsyncGenerator, AsyncIterator
from contextlib import aclosing, asynccontextmanager
from http import HTTPStatus
from typing import IO, Annotated, Any

import anyio.to_thread
from azure.core.exceptions import HttpResponseError
from fastapi import APIRouter, Depends, Path, Query, Request, Response
from fastapi.responses import JSONResponse

from initiator.dependencies import Services, get_services
from initiator.schemas import PROBLEM_MEDIA_TYPE, ProblemDetails
from initiator.uploads.ledger import UploadState

router = APIRouter(tags=["uploads"])

#: A Put Block's body at most (the SDK's default block is 4 MiB, AzCopy's 8 MiB). Blocks are
#: spooled to a temporary file, not held, so this bounds disk per request, not memory.
MAX_BLOCK_BYTES = 64 * 1024 * 1024
#: A block id's bytes at most. Azure takes 64; the embedded store keeps the id's base64
#: form, at most 64 characters, which is 48 bytes (AzCopy's ids are 36 bytes, those of
#: ``billing submit`` 6).
MAX_BLOCK_ID_BYTES = 48
#: Put Blob (the whole file in one request) is stored in blocks of this size.
PUT_BLOB_BLOCK_BYTES = 8 * 1024 * 1024
#: A block list of 50,000 ids (Azure's most) fits well within this.
MAX_BLOCK_LIST_BYTES = 8 * 1024 * 1024
_PROBLEMS: dict[int | str, dict[str, Any]] = {
    code: {"model": ProblemDetails} for code in (400, 403, 404, 413)
}
Blob = Annotated[str, Path(pattern=r"^[A-Za-z0-9_.-]{1,128}$")]


class UploadRefusedError(Exception):
    def __init__(self, status: int, code: str, reason: str) -> None:
        super().__init__(reason)
        self.status = status
        self.code = code


@router.put(
    "/uploads/{container}/{blob}",
    operation_id="putUploadBlock",
    summary="Upload a batch file, or one block of it (embedded backend)",
    status_code=201,
    responses=_PROBLEMS,
)
async def put_upload(
    request: Request,
    container: str,
    blob: Blob,
    se: str,
    sp: str,
    sig: str,
    comp: Annotated[str | None, Query(description="block or blocklist")] = None,
    blockid: Annotated[str | None, Query(description="the block's id, base64")] = None,
    services: Services = Depends(get_services),
) -> Response:
    """Azure's Put Block (``comp=block``), Put Block List (``comp=blocklist``) and Put Blob
    (no ``comp``), on the blob of a ``POST /uploads`` grant, for the embedded backend."""
    try:
        await _authorise(services, container, blob, se, sp, sig)
        uploads = services.uploads.container
        if comp == "block":
            block_id = _block_id(blockid)
            async with _spooled(request) as block:
                await anyio.to_thread.run_sync(uploads.stage_block, blob, block_id, block)
            return Response(status_code=201)
        if comp == "blocklist":
            ids = _block_list(await _read_block_list(request))
            written = await anyio.to_thread.run_sync(uploads.commit_blocks, blob, ids)
        elif comp is None:
            written = await _put_blob(request, services, blob)
        else:
            raise UploadRefusedError(400, "InvalidQueryParameterValue", f"unsupported comp={comp}")
    except UploadRefusedError as refused:
        return _refusal(refused)
    except HttpResponseError as error:
        if error.status_code != 400:
            raise
        return _refusal(UploadRefusedError(400, _error_code(error), str(error)))
    modified = written.last_modified
    last_modified = email.utils.format_datetime(modified, usegmt=True) if modified else ""
    return Response(status_code=201, headers={"ETag": written.etag, "Last-Modified": last_modified})


@router.api_route("/uploads/{container}/{blob}", methods=["GET", "HEAD"], include_in_schema=False)
async def read_upload(
    container: str,
    blob: Blob,
    se: str,
    sp: str,
    sig: str,
    services: Services = Depends(get_services),
) -> Response:
    """Reads (Get Blob Properties, Get Block List, Get Blob): refused as storage refuses a
    write-only SAS, 403 ``AuthorizationPermissionMismatch``.

    Clients ask: AzCopy reads the blob's length after an upload to check it, and takes this
    403 as a destination it may not read (``--check-length=false`` skips the read), where
    any other answer (a 405) fails its upload. Not in the OpenAPI document: no request
    here can succeed.
    """
    try:
        await _authorise(services, container, blob, se, sp, sig)
    except UploadRefusedError as refused:
        return _refusal(refused)
    return _refusal(
        UploadRefusedError(
            403, "AuthorizationPermissionMismatch", "the grant allows create and write only"
        )
    )


async def _authorise(
    services: Services, container: str, blob: str, se: str, sp: str, sig: str
) -> None:
    uploads = services.uploads
    signer = uploads.local
    if signer is None or container != uploads.container.name:
        # On Azure storage the grant's URL is the blob service's; this route is not served.
        raise UploadRefusedError(404, "ResourceNotFound", "no upload route on this backend")
    refusal = signer.verify(container, blob, se, sp, sig)
    if refusal is not None:
        raise UploadRefusedError(403, "AuthenticationFailed", refusal)
    entry = await anyio.to_thread.run_sync(uploads.ledger.find, blob)
    if entry is None or entry.state is not UploadState.ISSUED:
        raise UploadRefusedError(403, "AuthorizationFailure", "this upload was used already")


async def _put_blob(request: Request, services: Services, blob: str) -> Any:
    """The whole file in one request, spooled and stored as blocks as it arrives."""
    uploads = services.uploads.container
    ids: list[str] = []
    async with aclosing(_spooled_blocks(request.stream(), PUT_BLOB_BLOCK_BYTES)) as blocks:
        async for block in blocks:
            block_id = f"put-{len(ids):06d}"
            await anyio.to_thread.run_sync(uploads.stage_block, blob, block_id, block)
            ids.append(block_id)
    return await anyio.to_thread.run_sync(uploads.commit_blocks, blob, ids)


@asynccontextmanager
async def _spooled(request: Request) -> AsyncIterator[IO[bytes]]:
    """A Put Block's body in a temporary file, rewound: a block is never held in memory,
    so that many senders' blocks in flight cost the initiator disk, not RAM."""
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > MAX_BLOCK_BYTES:
        raise _block_too_large()
    with tempfile.TemporaryFile(prefix="billing-block-") as spool:
        size = 0
        async for part in request.stream():
            size += len(part)
            if size > MAX_BLOCK_BYTES:
                raise _block_too_large()
            await anyio.to_thread.run_sync(spool.write, part)
        spool.seek(0)
        yield spool


async def _spooled_blocks(
    stream: AsyncIterator[bytes], size: int
) -> AsyncGenerator[IO[bytes], None]:
    """A body as temporary files of ``size`` bytes each (the last one shorter), each
    rewound when full and yielded once, then closed (so deleted)."""
    parts = aiter(stream)
    pending = memoryview(b"")
    ended = False
    while not ended:
        with tempfile.TemporaryFile(prefix="billing-block-") as spool:
            held = 0
            while held < size:
                if not pending:
                    part = await anext(parts, None)
                    if part is None:
                        ended = True
                        break
                    pending = memoryview(part)
                taken = pending[: size - held]
                await anyio.to_thread.run_sync(spool.write, taken)
                held += len(taken)
                pending = pending[len(taken) :]
            if held:
                spool.seek(0)
                yield spool


def _too_large(what: str, limit: int) -> UploadRefusedError:
    return UploadRefusedError(413, "RequestBodyTooLarge", f"{what} is at most {limit:,} bytes")


def _block_too_large() -> UploadRefusedError:
    return _too_large("a block", MAX_BLOCK_BYTES)


async def _read_block_list(request: Request) -> bytes:
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > MAX_BLOCK_LIST_BYTES:
        raise _too_large("a block list", MAX_BLOCK_LIST_BYTES)
    parts: list[bytes] = []
    size = 0
    async for part in request.stream():
        parts.append(part)
        size += len(part)
        if size > MAX_BLOCK_LIST_BYTES:
            raise _too_large("a block list", MAX_BLOCK_LIST_BYTES)
    return b"".join(parts)


def _block_id(encoded: str | None) -> str:
    """The block's id (base64 of 1 to :data:`MAX_BLOCK_ID_BYTES` bytes), as base64.

    Kept encoded, as Azurite keeps it: an id is any bytes, and not every client's is text
    (AzCopy's hold a binary GUID). Encoded again from its bytes, so that one id has one form.
    """
    try:
        decoded = base64.b64decode(encoded or "", validate=True)
    except binascii.Error:
        decoded = b""
    if not decoded or len(decoded) > MAX_BLOCK_ID_BYTES:
        raise UploadRefusedError(
            400,
            "InvalidQueryParameterValue",
            f"blockid {encoded!r} is not the base64 of 1 to {MAX_BLOCK_ID_BYTES} bytes",
        )
    return base64.b64encode(decoded).decode()


def _block_list(body: bytes) -> list[str]:
    """The ids of ``<BlockList><Latest|Uncommitted|Committed>id</…>…</BlockList>``."""
    try:
        root = ElementTree.fromstring(body)
    except ElementTree.ParseError as error:
        raise UploadRefusedError(400, "InvalidXmlDocument", f"the block list: {error}") from None
    if root.tag != "BlockList":
        raise UploadRefusedError(400, "InvalidXmlDocument", "the body is not a <BlockList>")
    return [_block_id(element.text) for element in root]


def _refusal(refused: UploadRefusedError) -> JSONResponse:
    title = HTTPStatus(refused.status).phrase
    body = ProblemDetails(title=title, status=refused.status, detail=str(refused))
    return JSONResponse(
        body.model_dump(mode="json", exclude_none=True),
        status_code=refused.status,
        media_type=PROBLEM_MEDIA_TYPE,
        headers={"x-ms-error-code": refused.code},
    )


def _error_code(error: HttpResponseError) -> str:
    return str(getattr(error, "error_code", None) or "InvalidInput")

"""How chunk payload and result blobs are compressed: Zstandard, and gzip still read.

Every transaction is compressed twice on its way (its payload by the initiator, its result
by a processor) and decompressed twice, so the codec is on every role's hot path. Measured
on a 13,334-row result (1.49 MB of JSON, ``python -m bench.intake`` prints the payload's
table): gzip level 1 compresses at 1.38 µs a row to 28 %, and inflates at 0.49 µs; zstd
level 1 compresses at 0.42 µs a row to 23 %, and decompresses at 0.11 µs. Over the four
steps that is about 2.7 µs of CPU a transaction saved, and smaller blobs.

Both formats announce themselves in their first bytes, so :func:`decompress` reads either:
blobs written by the previous release (gzip) are still read during a rolling upgrade.
Frames carry their content size (the compressor's default), which bounds what
decompressing allocates; the blob's sha256 was checked against its message before.
"""

from __future__ import annotations

import gzip
from typing import TypeVar

import msgspec
import zstandard

Document = TypeVar("Document")

#: Zstandard level for payload and result blobs (see the module docstring).
DEFAULT_LEVEL = 1
_ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"
_GZIP_MAGIC = b"\x1f\x8b"


class BlobCompressionError(ValueError):
    """Bytes that are neither a Zstandard frame nor gzip, or a damaged one."""


def compress(document: bytes, *, level: int = DEFAULT_LEVEL) -> bytes:
    """``document`` as one Zstandard frame (the same bytes for the same input and level)."""
    # A compressor per call: one is not safe to share between the upload threads.
    return zstandard.ZstdCompressor(level=level).compress(document)


def decompress(data: bytes) -> bytes:
    """The document in ``data``, a Zstandard frame or gzip. Raises :class:`BlobCompressionError`."""
    try:
        if data.startswith(_ZSTD_MAGIC):
            return zstandard.ZstdDecompressor().decompress(data)
        if data.startswith(_GZIP_MAGIC):
            return gzip.decompress(data)
    except (zstandard.ZstdError, OSError, EOFError) as exc:
        raise BlobCompressionError(f"a damaged compressed blob: {exc}") from None
    raise BlobCompressionError("neither Zstandard nor gzip")


def decode_document(
    data: bytes, decoder: msgspec.json.Decoder[Document], error: type[ValueError], what: str
) -> Document:
    """Decompress ``data`` and decode its JSON with ``decoder`` (which checks every type).

    Any failure is raised as ``error``, saying what ``data`` is not (``what``: "chunk
    payload") and, for a value of the wrong type or shape, where (``$.rows[3][4]``).
    """
    try:
        document = decompress(data)
    except BlobCompressionError as exc:
        raise error(f"not a compressed {what}: {exc}") from None
    return decode_json(document, decoder, error, what)


def decode_json(
    document: bytes, decoder: msgspec.json.Decoder[Document], error: type[ValueError], what: str
) -> Document:
    """:func:`decode_document` for a document already decompressed."""
    try:
        return decoder.decode(document)
    except msgspec.ValidationError as exc:
        raise error(f"malformed {what}: {exc}") from None
    except msgspec.DecodeError as exc:
        raise error(f"not a JSON {what}: {exc}") from None

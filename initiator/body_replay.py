"""A request body read once and, when asked, again from its first byte.

The parallel intake (:mod:`initiator.segmented_read`) may find halfway that a file needs
the serial reader after all, which must then read it from the start. The blocks read so
far are kept in a temporary file (in memory up to :data:`IN_MEMORY_BYTES`, then on disk,
so a gigabyte body costs disk, not memory) and :meth:`ReplayableBody.again` yields them,
then goes on reading the rest of the body from the client. The body as sent is recorded
(gzip still compressed), so what is kept is what came over the wire.
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterable, Iterator

from shared.closing import Closing

IN_MEMORY_BYTES = 8 * 1024 * 1024
_READ_BACK_BYTES = 1024 * 1024


class ReplayableBody(Closing):
    """Iterate once for the body's blocks (recorded); then :meth:`again` for all of them."""

    def __init__(self, body: Iterable[bytes]) -> None:
        self._body = body
        # Open as long as this object is: closed by close() or once read back.
        self._kept = tempfile.SpooledTemporaryFile(max_size=IN_MEMORY_BYTES)  # noqa: SIM115

    def __iter__(self) -> Iterator[bytes]:
        for block in self._body:
            self._kept.write(block)
            yield block

    def again(self) -> Iterator[bytes]:
        """The blocks read so far, then the rest of the body (which nothing reads twice)."""
        self._kept.seek(0)
        while block := self._kept.read(_READ_BACK_BYTES):
            yield block
        self._kept.close()
        yield from self._body

    def close(self) -> None:
        self._kept.close()

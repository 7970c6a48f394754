"""Stop an intake when its client hangs up after sending the whole body.

While the body is being read, a hang-up shows as ``ClientDisconnect`` from the stream. Once
the last byte is in, the parser may still work for a long time (a small gzip body can
inflate to the decompressed-size limit) and nothing reads from the connection any more. So
a watcher waits, on the event loop, for the server's ``http.disconnect`` and tells the body
(:meth:`~initiator.body.BlockingBody.client_gone`); the parser checks it between blocks and
gives up, discarding what it had stored, and the intake checks it once more before the
commit (the intake helpers may validate for a while after the last block was read). A
batch whose commit has begun is not stopped.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Protocol, TypeVar

import anyio
from starlette.types import Receive

T = TypeVar("T")


class Watched(Protocol):
    """A body the watcher tells of a hang-up (:class:`~initiator.body.BlockingBody`, or an
    upload's :class:`~initiator.uploads.blob_body.BlobBody`)."""

    @property
    def received_whole(self) -> anyio.Event: ...

    def client_gone(self) -> None: ...


async def unless_client_leaves(
    receive: Receive, body: Watched, work: Callable[[], Awaitable[T]]
) -> T:
    """Run ``work`` while watching for the client's hang-up once ``body`` is read whole."""

    async def watch() -> None:
        await body.received_whole.wait()
        while (await receive())["type"] != "http.disconnect":
            pass  # nothing else can come after the whole body
        body.client_gone()

    failure: Exception | None = None
    async with anyio.create_task_group() as group:
        group.start_soon(watch)
        try:
            result = await work()
        except Exception as error:  # raised below, outside the group: not as a group
            failure = error
        group.cancel_scope.cancel()
    if failure is not None:
        raise failure
    return result

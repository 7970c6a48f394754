"""A storage queue through azure-storage-queue.

Messages are plain text (the client's default ``NoEncodePolicy``): our content is JSON, so
base64 would only cost a third more bytes against the 64 KiB limit.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from contextlib import contextmanager, suppress

from azure.core.exceptions import HttpResponseError, ResourceExistsError, ResourceNotFoundError
from azure.storage.queue import QueueClient, StorageErrorCode
from azure.storage.queue import QueueMessage as SdkQueueMessage

from shared.storage import queue_rules
from shared.storage.ports import MAX_MESSAGES_PER_RECEIVE, MessageTooLargeError, QueueMessage

#: Azure keeps a message 7 days by default, then drops it silently; a billing work item
#: must wait for as long as it takes (``-1``: never expires).
NEVER_EXPIRES = -1


class AzureQueue:
    """One queue of a storage account; see :class:`shared.storage.ports.Queue`."""

    def __init__(self, client: QueueClient) -> None:
        self._client = client

    @property
    def name(self) -> str:
        return self._client.queue_name

    def create(self) -> None:
        with suppress(ResourceExistsError):
            self._client.create_queue()

    def delete_queue(self) -> None:
        with suppress(ResourceNotFoundError):
            self._client.delete_queue()

    def send(self, content: str, *, visibility_timeout: int = 0) -> None:
        queue_rules.check_message(content)
        with _too_large_as_message_error():
            self._client.send_message(
                content,
                visibility_timeout=visibility_timeout or None,
                time_to_live=NEVER_EXPIRES,
            )

    def receive(
        self, max_messages: int = MAX_MESSAGES_PER_RECEIVE, visibility_timeout: int = 30
    ) -> list[QueueMessage]:
        queue_rules.check_batch_size(max_messages)
        pager = self._client.receive_messages(
            messages_per_page=max_messages,
            max_messages=max_messages,
            visibility_timeout=visibility_timeout,
        )
        # The first page only: the pager would otherwise ask again when a page comes back
        # short, and one receive must stay one (billed) request.
        first_page: Iterable[SdkQueueMessage] = next(pager.by_page(), ())
        return [_to_port(message) for message in first_page]

    def delete(self, message: QueueMessage) -> None:
        with _stale_receipt_as_not_found():
            self._client.delete_message(message.id, message.pop_receipt)

    def update_visibility(self, message: QueueMessage, visibility_timeout: int) -> QueueMessage:
        with _stale_receipt_as_not_found():
            # No content: the service keeps the message text as it is.
            updated = self._client.update_message(
                message.id, message.pop_receipt, visibility_timeout=visibility_timeout
            )
        return QueueMessage(
            id=message.id,
            pop_receipt=updated.pop_receipt or "",
            content=message.content,
            dequeue_count=message.dequeue_count,
            inserted_on=message.inserted_on,
            next_visible_on=updated.next_visible_on,
        )

    def peek(self, max_messages: int = MAX_MESSAGES_PER_RECEIVE) -> list[QueueMessage]:
        queue_rules.check_batch_size(max_messages)
        return [_to_port(message) for message in self._client.peek_messages(max_messages)]

    def approximate_count(self) -> int:
        return self._client.get_queue_properties().approximate_message_count or 0

    def clear(self) -> None:
        self._client.clear_messages()


def _to_port(message: SdkQueueMessage) -> QueueMessage:
    return QueueMessage(
        id=message.id,
        pop_receipt=message.pop_receipt or "",  # a peeked message has none
        content=message.content or "",
        dequeue_count=message.dequeue_count or 0,
        inserted_on=message.inserted_on,
        next_visible_on=message.next_visible_on,
    )


@contextmanager
def _stale_receipt_as_not_found() -> Iterator[None]:
    """A stale pop receipt raises ``ResourceNotFoundError``, whoever answers.

    Azure answers 404 ``MessageNotFound`` when the message was received again since;
    Azurite answers 400 ``PopReceiptMismatch``, which the SDK leaves a bare
    ``HttpResponseError``. Either way the caller no longer owns the message.
    """
    try:
        yield
    except HttpResponseError as error:
        if _error_code(error) != StorageErrorCode.POP_RECEIPT_MISMATCH:
            raise
        raise ResourceNotFoundError(message=error.message, response=error.response) from error


@contextmanager
def _too_large_as_message_error() -> Iterator[None]:
    """The service's 413 ``RequestBodyTooLarge``, should it disagree with our own count."""
    try:
        yield
    except HttpResponseError as error:
        if _error_code(error) != StorageErrorCode.REQUEST_BODY_TOO_LARGE:
            raise
        raise MessageTooLargeError(str(error.message)) from error


def _error_code(error: HttpResponseError) -> str | None:
    """The service's error code, which the storage SDK sets on the exception at run time."""
    code: str | None = getattr(error, "error_code", None)
    return code

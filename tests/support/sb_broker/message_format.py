"""Read the ``message-format`` of incoming transfers, which proton's Python API hides.

A Service Bus batch arrives as one transfer with message-format ``0x80013700`` whose data
sections each hold a whole message. Guessing a batch from its shape would misread a single
message whose body happens to be an encoded AMQP message, so the broker reads the real
field instead. proton-c knows it (``pn_delivery_format``) but its Python binding exposes
neither that function nor the frame, so we install a per-connection frame tracer
(``Transport.tracer`` with ``TRACE_FRM``) and parse the two frame kinds we need:

* ``attach`` from the peer: which link name the peer's (channel, handle) pair stands for;
* ``transfer`` from the peer with a ``delivery-id`` (the first frame of a delivery): its
  message-format, queued per link name.

The tracer runs while proton reads the socket, before the delivery event is dispatched, and
a link's deliveries arrive in order, so the handler pops one format per complete delivery.
The parsing is tied to proton's trace layout (checked by ``tests/servicebus/test_broker.py``,
which sends a batch and a single message whose body looks like a batch).
"""

from __future__ import annotations

import re
from collections import defaultdict, deque

from proton import Transport

_QUOTED = r'"((?:[^"\\]|\\.)*)"'
# proton 0.40 traces an incoming frame as 'FRAME: <channel> <- @<performative>(<code>) [...]'.
_ATTACH = re.compile(rf"^FRAME: (\d+) <- @attach\(18\) \[name={_QUOTED}, handle=(\w+)")
_TRANSFER = re.compile(r"^FRAME: (\d+) <- @transfer\(20\) \[handle=(\w+), delivery-id=\w+")
_FORMAT = re.compile(rf"delivery-tag=b{_QUOTED}, message-format=(\w+)")


class FormatTracer:
    """A transport tracer that remembers the message-format of each incoming delivery."""

    def __init__(self) -> None:
        self._link_names: dict[tuple[str, str], str] = {}
        self._formats: defaultdict[str, deque[int]] = defaultdict(deque)

    def install(self, transport: Transport) -> None:
        transport.tracer = self
        transport.trace(Transport.TRACE_FRM)

    def __call__(self, transport: Transport, line: str) -> None:
        if attach := _ATTACH.match(line):
            channel, name, handle = attach.groups()
            self._link_names[(channel, handle)] = name
        elif transfer := _TRANSFER.match(line):
            channel, handle = transfer.groups()
            name = self._link_names.get((channel, handle))
            if name is not None:
                found = _FORMAT.search(line)
                self._formats[name].append(int(found.group(2), 0) if found else 0)

    def take(self, link_name: str) -> int:
        """The message-format of the oldest complete delivery not yet taken on this link."""
        queued = self._formats.get(link_name)
        if not queued:
            raise LookupError(f"no transfer frame traced for link {link_name!r}")
        return queued.popleft()

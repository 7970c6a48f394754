"""Read the ``message-format`` of incoming transfers, which proton's Python API hides.

A Service Bus batch arrives as one transfer with message-format ``0x80013700`` whose data
sections each hold a whole message. Guessing a batch from its shape would misread a single
message whose body happens to be an encoded AMQP message, so the broker reads the real
field instead. proton-c knows it (``pn_delivery_format``) but its Python binding exposes
neither that function nor the frame, so we install a per-connection frame tracer
(``Transport.tracer`` with ``TRACE_FRM``) and parse the two frame kinds we need:

* ``attach`` from the peer: which link name the peer's (channel, handle) pair stands for;
* ``transfer`` from the peer: the message-format of the first frame of each delivery (a
  delivery spans frames until one without ``more=true``), queued per link name.

The tracer runs while proton reads the socket, before the delivery event is dispatched, and
a link's deliveries arrive in order, so the handler pops one format per complete delivery.
The parsing is tied to proton's trace layout; ``tests/servicebus/test_broker.py`` checks it
with a batch, a single message whose body looks like a batch, and messages spanning frames.
"""

from __future__ import annotations

import re
from collections import defaultdict, deque

from proton import Transport

_QUOTED = r'"(?:[^"\\]|\\.)*"'
# proton 0.40 traces an incoming frame as 'FRAME: <channel> <- @<performative>(<code>) [...]'.
_ATTACH = re.compile(rf"^FRAME: (\d+) <- @attach\(18\) \[name=({_QUOTED}), handle=(\w+)")
_TRANSFER = re.compile(
    rf"^FRAME: (\d+) <- @transfer\(20\) \[handle=(\w+)((?:[^\]\"]|{_QUOTED})*)\]"
)
_FORMAT = re.compile(r"\bmessage-format=(\w+)")
_MORE = re.compile(r"\bmore=true\b")


class FormatTracer:
    """A transport tracer that remembers the message-format of each incoming delivery."""

    def __init__(self) -> None:
        self._link_names: dict[tuple[str, str], str] = {}
        self._formats: defaultdict[str, deque[int]] = defaultdict(deque)
        #: links whose last transfer frame said more=true: the next frame continues it
        self._continuing: set[str] = set()

    def install(self, transport: Transport) -> None:
        transport.tracer = self
        transport.trace(Transport.TRACE_FRM)

    def __call__(self, transport: Transport, line: str) -> None:
        if attach := _ATTACH.match(line):
            channel, quoted_name, handle = attach.groups()
            self._link_names[(channel, handle)] = _unquoted(quoted_name)
        elif transfer := _TRANSFER.match(line):
            channel, handle, fields = transfer.groups()
            name = self._link_names.get((channel, handle))
            if name is None:
                return
            # pyamqp repeats delivery-id and message-format on every frame of a delivery;
            # only the first frame of each counts
            if name not in self._continuing:
                found = _FORMAT.search(fields)
                self._formats[name].append(int(found.group(1), 0) if found else 0)
            if _MORE.search(fields):
                self._continuing.add(name)
            else:
                self._continuing.discard(name)

    def take(self, link_name: str) -> int:
        """The message-format of the oldest complete delivery not yet taken on this link."""
        queued = self._formats.get(link_name)
        if not queued:
            raise LookupError(f"no transfer frame traced for link {link_name!r}")
        return queued.popleft()


def _unquoted(quoted: str) -> str:
    """A name as proton traced it: in double quotes, with backslash escapes."""
    return quoted[1:-1].encode("latin-1", "backslashreplace").decode("unicode_escape")

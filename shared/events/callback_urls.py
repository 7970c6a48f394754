"""Which callback URLs the service may send a request to.

A callback is a request the server makes on a sender's behalf, so a URL naming the
deployment's own network (a database, the instance metadata endpoint at 169.254.169.254,
a service on loopback) must be refused: the classic server-side request forgery. The rule:

* ``http`` or ``https``, a host, no user name or password in the URL;
* the host is resolved and **every** address it resolves to must be global (not private,
  loopback, link-local, shared, multicast or reserved), unless it lies in one of the
  networks a deployment allows explicitly (``BILLING_CALLBACK_ALLOWED_NETWORKS``, e.g.
  ``127.0.0.0/8`` for a local demo).

The initiator checks a callback when the batch is posted (a clear 422) and the sender of
the webhook checks again before each attempt, since a name may resolve elsewhere later,
and then connects to an address it checked rather than resolving the name again;
redirects are never followed (controller.events.webhooks).
"""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Callable, Iterable, Sequence
from urllib.parse import urlsplit

from shared.warehouse.models import CALLBACK_LENGTH

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
Network = ipaddress.IPv4Network | ipaddress.IPv6Network
#: host, port -> the addresses it resolves to (``socket.getaddrinfo`` by default)
Resolver = Callable[[str, int], Iterable[str]]


class CallbackRefusedError(ValueError):
    """The URL is not one the service sends requests to; the message says why."""


def resolve_host(host: str, port: int) -> list[str]:
    """Every address ``host`` resolves to (``socket.getaddrinfo``)."""
    try:
        answers = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except socket.gaierror as error:
        raise CallbackRefusedError(
            f"the host {host!r} does not resolve ({error.strerror})"
        ) from None
    return [str(answer[4][0]) for answer in answers]


def parse_networks(networks: Iterable[str]) -> tuple[Network, ...]:
    return tuple(ipaddress.ip_network(network, strict=False) for network in networks)


def check_callback(
    url: str,
    allowed_networks: Sequence[str] = (),
    *,
    resolve: Resolver = resolve_host,
) -> str:
    """``url`` if the service may call it; raises :class:`CallbackRefusedError` otherwise."""
    checked_addresses(url, allowed_networks, resolve=resolve)
    return url


def checked_addresses(
    url: str,
    allowed_networks: Sequence[str] = (),
    *,
    resolve: Resolver = resolve_host,
) -> list[str]:
    """The addresses ``url``'s host resolves to, all of them allowed; raises
    :class:`CallbackRefusedError` if the URL or any of them is not. A request made to one
    of these (not to the name, which could resolve elsewhere a moment later) goes where
    the check looked."""
    if len(url) > CALLBACK_LENGTH:
        raise CallbackRefusedError(f"a callback URL is at most {CALLBACK_LENGTH} characters")
    try:
        parts = urlsplit(url)
        port = parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError as error:
        raise CallbackRefusedError(f"not a URL: {error}") from None
    if parts.scheme not in ("http", "https"):
        raise CallbackRefusedError("a callback URL must be http or https")
    if not parts.hostname:
        raise CallbackRefusedError("a callback URL must name a host")
    if parts.username is not None or parts.password is not None:
        raise CallbackRefusedError("a callback URL must not hold credentials")
    allowed = parse_networks(allowed_networks)
    addresses = [text.split("%", 1)[0] for text in resolve(parts.hostname, port)]  # no zone
    if not addresses:
        raise CallbackRefusedError(f"the host {parts.hostname!r} resolves to no address")
    for text in addresses:
        address = ipaddress.ip_address(text)
        if not _permitted(address, allowed):
            raise CallbackRefusedError(
                f"the host {parts.hostname!r} resolves to {address}, a private, loopback, "
                "link-local or reserved address (BILLING_CALLBACK_ALLOWED_NETWORKS can allow it)"
            )
    return addresses


def _permitted(address: IPAddress, allowed: Sequence[Network]) -> bool:
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped  # ::ffff:127.0.0.1 is loopback too
    if any(address.version == network.version and address in network for network in allowed):
        return True
    return address.is_global and not address.is_multicast

"""Which callback URLs the service calls (shared.events.callback_urls)."""

from __future__ import annotations

from collections.abc import Iterable

import pytest

from shared.events.callback_urls import CallbackRefusedError, Resolver, check_callback


def resolving_to(*addresses: str) -> Resolver:
    def resolve(host: str, port: int) -> Iterable[str]:
        return addresses

    return resolve


@pytest.mark.parametrize(
    "address",
    [
        "127.0.0.1",
        "10.0.0.8",
        "172.16.3.4",
        "192.168.1.1",
        "169.254.169.254",
        "100.64.0.1",
        "0.0.0.0",
        "::1",
        "fe80::1",
        "fd00::1",
        "::ffff:127.0.0.1",
        "224.0.0.1",
    ],
)
def test_a_host_resolving_into_a_non_global_network_is_refused(address: str) -> None:
    with pytest.raises(CallbackRefusedError, match="private, loopback, link-local"):
        check_callback("https://hooks.example.com/x", resolve=resolving_to(address))


def test_every_address_of_the_host_is_checked_not_only_the_first() -> None:
    with pytest.raises(CallbackRefusedError, match=r"10\.0\.0\.8"):
        check_callback(
            "https://hooks.example.com/x", resolve=resolving_to("93.184.216.34", "10.0.0.8")
        )


def test_a_public_host_is_allowed() -> None:
    url = "https://hooks.example.com:8443/billing?x=1"
    assert check_callback(url, resolve=resolving_to("93.184.216.34", "2606:2800::1")) == url


def test_a_network_the_deployment_allows_is_allowed() -> None:
    url = "http://127.0.0.1:9000/hook"
    assert check_callback(url, ["127.0.0.0/8"]) == url
    with pytest.raises(CallbackRefusedError):
        check_callback("http://169.254.169.254/", ["127.0.0.0/8"])


@pytest.mark.parametrize(
    ("url", "reason"),
    [
        ("ftp://example.com/x", "http or https"),
        ("http:///x", "must name a host"),
        ("https://user:pw@example.com/", "credentials"),
        ("https://example.com/" + "x" * 2100, "at most 2048"),
        ("https://no-such-host.invalid/", "does not resolve"),
    ],
)
def test_malformed_or_unresolvable_urls_are_refused_with_the_reason(url: str, reason: str) -> None:
    with pytest.raises(CallbackRefusedError, match=reason):
        check_callback(url)

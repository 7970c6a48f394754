"""azd preprovision hook: fill in what `azd up` needs and nobody should have to type.

Python's standard library only (it runs before anything is installed):

* ``AZURE_PRINCIPAL_NAME`` / ``AZURE_PRINCIPAL_TYPE``: the signed-in principal's name and
  kind, from the claims of an ``azd auth token`` (the warehouse's Entra administrator is
  named by it, and the postprovision hook signs in as it);
* ``BILLING_API_KEY``: a random API key for the initiator, kept in the azd environment;
* ``BILLING_DEVELOPER_IP``: this machine's public address, let through the warehouse
  firewall so that the postprovision hook can reach it (skipped if it cannot be found).

A value already in the environment is kept.
"""

from __future__ import annotations

import base64
import json
import os
import secrets
import subprocess
import sys
import urllib.request
from collections.abc import Mapping
from typing import Any

MANAGEMENT_SCOPE = "https://management.azure.com//.default"
PUBLIC_IP_URL = "https://api.ipify.org"


def token_claims(token: str) -> dict[str, Any]:
    """The payload of a JWT (not verified: it only names who we already are)."""
    payload = token.split(".")[1]
    padded = payload + "=" * (-len(payload) % 4)
    claims: dict[str, Any] = json.loads(base64.urlsafe_b64decode(padded))
    return claims


def principal_from_claims(claims: Mapping[str, Any]) -> tuple[str, str]:
    """``(name, type)`` for the PostgreSQL Entra administrator: a user's UPN, else the app."""
    for claim in ("upn", "preferred_username", "unique_name"):
        if claims.get(claim):
            return str(claims[claim]), "User"
    return str(claims.get("appid") or claims["oid"]), "ServicePrincipal"


def azd(*args: str) -> str:
    return subprocess.run(["azd", *args], check=True, capture_output=True, text=True).stdout


def set_value(name: str, value: str) -> None:
    azd("env", "set", name, value)
    print(f"preprovision: {name} set in the azd environment")


def public_ip() -> str | None:
    try:
        with urllib.request.urlopen(PUBLIC_IP_URL, timeout=10) as response:
            return str(response.read().decode().strip())
    except OSError as error:
        print(
            f"preprovision: no public IP found ({error}); set BILLING_DEVELOPER_IP", file=sys.stderr
        )
        return None


def main() -> None:
    if not os.environ.get("AZURE_PRINCIPAL_NAME"):
        token = json.loads(azd("auth", "token", "--output", "json", "--scope", MANAGEMENT_SCOPE))
        name, kind = principal_from_claims(token_claims(token["token"]))
        set_value("AZURE_PRINCIPAL_NAME", name)
        set_value("AZURE_PRINCIPAL_TYPE", kind)
    if not os.environ.get("BILLING_API_KEY"):
        set_value("BILLING_API_KEY", secrets.token_urlsafe(32))
    if not os.environ.get("BILLING_DEVELOPER_IP"):
        address = public_ip()
        if address:
            set_value("BILLING_DEVELOPER_IP", address)


if __name__ == "__main__":
    main()

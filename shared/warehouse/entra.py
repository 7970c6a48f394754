"""Microsoft Entra sign-in to Azure Database for PostgreSQL: a token as the password.

The deployed warehouse accepts no passwords. Each role connects as its managed identity:
the URL names the database role (the identity's name) and no password, and every *new*
connection gets a fresh access token from ``azure-identity`` as its password, through the
engine's ``do_connect`` event. Tokens live about an hour and the credential caches and
renews them, so a pool that opens a connection at any time still signs in; an open
connection stays valid after its token expires (the server checks it at sign-in only).
"""

from __future__ import annotations

from typing import Any

from azure.core.credentials import TokenCredential
from sqlalchemy import Engine, event
from sqlalchemy.engine import URL

#: The audience of Azure Database for PostgreSQL tokens, in every Azure cloud.
TOKEN_SCOPE = "https://ossrdbms-aad.database.windows.net/.default"

#: Host suffixes of Azure Database for PostgreSQL flexible servers (public, US Gov, China).
AZURE_POSTGRES_SUFFIXES = (
    ".postgres.database.azure.com",
    ".postgres.database.usgovcloudapi.net",
    ".postgres.database.chinacloudapi.cn",
)


def wants_entra_token(url: URL) -> bool:
    """Whether ``url`` signs in with Entra: a PostgreSQL URL of an Azure server, no password.

    Such a server with password authentication disabled takes nothing else, so there is
    no setting to forget: a password in the URL (a server that still has password
    authentication, a local one) is used as given.
    """
    host = (url.host or "").lower()
    return (
        url.get_backend_name() == "postgresql"
        and url.password is None
        and host.endswith(AZURE_POSTGRES_SUFFIXES)
    )


def sign_in_with_tokens(engine: Engine, credential: TokenCredential) -> None:
    """Give every new connection of ``engine`` a token from ``credential`` as its password."""

    @event.listens_for(engine, "do_connect")
    def _token_as_password(
        _dialect: Any, _record: Any, _cargs: tuple[Any, ...], cparams: dict[str, Any]
    ) -> None:
        cparams["password"] = credential.get_token(TOKEN_SCOPE).token


def default_credential() -> TokenCredential:
    """The managed identity in Azure (``AZURE_CLIENT_ID``), the developer's sign-in locally."""
    from azure.identity import DefaultAzureCredential

    return DefaultAzureCredential()

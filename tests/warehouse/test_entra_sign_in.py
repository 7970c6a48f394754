"""Entra sign-in: each new connection's password is a token from the credential.

On a real PostgreSQL server with password authentication, a "credential" whose token is
the role's password plays Microsoft Entra: the URL carries no password, so a connection
succeeds only if the ``do_connect`` event supplied it, and a wrong token is refused.
"""

from __future__ import annotations

import time
from typing import Any

import pytest
from azure.core.credentials import AccessToken
from sqlalchemy import Engine, create_engine, text
from sqlalchemy.engine import URL, make_url
from sqlalchemy.exc import OperationalError
from sqlalchemy.pool import NullPool

from shared.warehouse import make_engine
from shared.warehouse.entra import TOKEN_SCOPE, sign_in_with_tokens, wants_entra_token


class TokenIssuer:
    """A TokenCredential (duck-typed, as azure-identity's are used) that records its calls."""

    def __init__(self, token: str) -> None:
        self.token = token
        self.scopes: list[tuple[str, ...]] = []

    def get_token(self, *scopes: str, **_kwargs: Any) -> AccessToken:
        self.scopes.append(scopes)
        return AccessToken(self.token, int(time.time()) + 3600)


def _without_password(admin: Engine) -> tuple[str, str]:
    url = make_url(admin.url)
    assert url.password, "BILLING_TEST_POSTGRES_URL needs a password for this test"
    # URL.set(password=None) would keep the password: build the URL without one.
    bare = URL.create(url.drivername, url.username, None, url.host, url.port, url.database)
    assert bare.password is None
    return bare.render_as_string(hide_password=False), str(url.password)


@pytest.mark.postgres
def test_every_new_connection_signs_in_with_a_fresh_token(postgres_admin: Engine) -> None:
    url, password = _without_password(postgres_admin)
    issuer = TokenIssuer(password)
    engine = create_engine(url, poolclass=NullPool)  # every checkout a new connection
    sign_in_with_tokens(engine, issuer)
    try:
        for _ in range(2):
            with engine.connect() as connection:
                user = connection.execute(text("SELECT current_user")).scalar_one()
                assert user == make_url(url).username
    finally:
        engine.dispose()
    assert issuer.scopes == [(TOKEN_SCOPE,), (TOKEN_SCOPE,)]


@pytest.mark.postgres
def test_a_wrong_token_is_refused(postgres_admin: Engine) -> None:
    url, _ = _without_password(postgres_admin)
    engine = create_engine(url, poolclass=NullPool)
    sign_in_with_tokens(engine, TokenIssuer("not-the-password"))
    try:
        with pytest.raises(OperationalError, match="password authentication failed"):
            engine.connect().close()
    finally:
        engine.dispose()


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("postgresql+psycopg://id-controller-x@psql-x.postgres.database.azure.com/billing", True),
        ("postgresql+psycopg://id-x@psql-x.postgres.database.chinacloudapi.cn/billing", True),
        ("postgresql+psycopg://admin:secret@psql-x.postgres.database.azure.com/billing", False),
        ("postgresql+psycopg://billing@127.0.0.1:5432/billing", False),
        ("sqlite:///warehouse.sqlite3", False),
    ],
)
def test_only_a_passwordless_azure_server_url_uses_tokens(url: str, expected: bool) -> None:
    assert wants_entra_token(make_url(url)) is expected


@pytest.mark.postgres
def test_make_engine_signs_in_to_an_azure_server_with_tokens(
    postgres_admin: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The URL names an Azure server; libpq's ``hostaddr`` sends it to the local one."""
    local, password = _without_password(postgres_admin)
    parts = make_url(local)
    issuer = TokenIssuer(password)
    monkeypatch.setattr("shared.warehouse.engine.default_credential", lambda: issuer)
    url = parts.set(
        host="psql-test.postgres.database.azure.com",
        query={"hostaddr": parts.host or "127.0.0.1"},
    )
    assert url.password is None
    engine = make_engine(url.render_as_string(hide_password=False))
    try:
        with engine.connect() as connection:
            assert connection.execute(text("SELECT 1")).scalar_one() == 1
    finally:
        engine.dispose()
    assert issuer.scopes == [(TOKEN_SCOPE,)]

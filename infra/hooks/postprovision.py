"""azd postprovision hook: the warehouse's schema and a database user per app identity.

Runs as the person who ran azd, the server's Microsoft Entra administrator, signed in
with an Entra token (``DefaultAzureCredential`` finds the azd or az sign-in), with the
project's ``.venv`` (``scripts/bootstrap.sh``, run by the hook first):

1. creates the database user of each identity that uses the warehouse
   (``shared.warehouse.access.WAREHOUSE_ACCESS``), tied to its object id;
2. migrates the warehouse to the newest revision (``billing warehouse upgrade``);
3. grants each user what its role needs, no more.

Every step is idempotent: a second `azd provision` changes nothing.
"""

from __future__ import annotations

import json
import os

from sqlalchemy.engine import URL

from shared.warehouse import make_engine, upgrade
from shared.warehouse.access import WAREHOUSE_ACCESS, create_entra_user, grant_access


def warehouse_url(database: str) -> str:
    """The administrator's URL: no password, so the engine signs in with Entra tokens."""
    url = URL.create(
        "postgresql+psycopg",
        username=os.environ["AZURE_PRINCIPAL_NAME"],
        host=os.environ["BILLING_WAREHOUSE_HOST"],
        port=5432,
        database=database,
        query={"sslmode": "require"},
    )
    return url.render_as_string(hide_password=False)


def main() -> None:
    database = os.environ["BILLING_WAREHOUSE_DATABASE"]
    identities = {
        entry["role"]: entry for entry in json.loads(os.environ["BILLING_WAREHOUSE_ROLES"])
    }
    users = {identities[role]["name"]: access for role, access in WAREHOUSE_ACCESS.items()}

    engine = make_engine(warehouse_url("postgres"))
    try:
        with engine.begin() as connection:
            for role in WAREHOUSE_ACCESS:
                entry = identities[role]
                if create_entra_user(connection, entry["name"], entry["objectId"]):
                    print(f"postprovision: database user {entry['name']} created ({role})")
    finally:
        engine.dispose()

    url = warehouse_url(database)
    upgrade(url)
    engine = make_engine(url)
    try:
        with engine.begin() as connection:
            grant_access(connection, users, database)
    finally:
        engine.dispose()
    print(f"postprovision: warehouse migrated; access granted to {', '.join(users)}")


if __name__ == "__main__":
    main()

"""With BILLING_PROVISION_RESOURCES=false a role creates nothing: Bicep declared it all,
and the roles' identities have data rights only."""

from __future__ import annotations

from pathlib import Path

from shared.provision import ensure_resources
from shared.settings import Settings
from shared.storage import open_storage
from tests.support.deployment_settings import deployment_values


def test_a_role_creates_nothing_when_the_deployment_declares_it(tmp_path: Path) -> None:
    values = deployment_values(tmp_path, partitions=1, provision_resources=False)
    settings = Settings(_env_file=None, **values)  # type: ignore[call-arg, arg-type]
    storage = open_storage(settings)
    try:
        ensure_resources(settings, storage, None)
        assert storage.list_queues() == []
        assert storage.list_containers() == []
        assert storage.list_tables() == []
        ensure_resources(settings.model_copy(update={"provision_resources": True}), storage, None)
        assert storage.list_queues() != []
    finally:
        storage.close()

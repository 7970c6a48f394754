"""An all-in-one deployment of its own for the browser tests: uvicorn on a free port, a
processor and a controller in the process, embedded storage and a SQLite warehouse."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from billing.all_in_one import AllInOne
from billing.demo.cluster import free_port
from tests.support.deployment_settings import deployment_values, settings_factory


@contextmanager
def all_in_one(folder: Path, api_key: str, **values: object) -> Iterator[str]:
    """Serve until the block ends; yields the base URL. ``values`` are settings."""
    settings = settings_factory(
        deployment_values(
            folder,
            warehouse_url=f"sqlite:///{folder / 'warehouse.sqlite3'}",
            api_keys=[api_key],
            partitions=2,
            backoff_max_idle_ms=300,
            **values,
        )
    )()
    port = free_port()
    server = AllInOne(settings, host="127.0.0.1", port=port)
    server.start()
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.stop()

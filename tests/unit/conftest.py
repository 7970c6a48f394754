"""Fixtures shared by the unit tests of the embedded storage backend."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from shared.storage.embedded import EmbeddedStorageAccount


@pytest.fixture
def account(tmp_path: Path) -> Iterator[EmbeddedStorageAccount]:
    """An embedded storage account in the test's own folder, closed after the test."""
    opened = EmbeddedStorageAccount(tmp_path)
    yield opened
    opened.close()

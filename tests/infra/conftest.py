"""Every Bicep file of ``infra/``, parsed once for the session."""

from __future__ import annotations

import pytest

from tests.infra.bicep import BicepFile, bicep_files


@pytest.fixture(scope="session")
def infra_files() -> list[BicepFile]:
    files = [BicepFile.parse(path) for path in bicep_files()]
    assert files, "no .bicep file under infra/"
    return files

"""AzCopy for the test suite: the session fixture ``azcopy`` yields an :class:`AzCopy`.

AzCopy is the npm package ``@azure-tools/azcopy-linux`` (Microsoft's build, the binary under
``dist/bin``), installed in ``$BILLING_AZCOPY_DIR`` or ``<repo>/.cache/azcopy`` by
``scripts/azcopy.sh`` (which ``scripts/test.sh`` runs) or, when missing, by the fixture
itself. Without npm, or off Linux x86-64 (the only binary the package ships), the AzCopy
tests are skipped with a message that says so, except under CI (``CI`` set), where they fail.
"""

from __future__ import annotations

import os
import platform
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.support.azurite import unavailable

AZCOPY_VERSION = "10.32.2"
PACKAGE = "@azure-tools/azcopy-linux"
BINARY = Path("node_modules/@azure-tools/azcopy-linux/dist/bin/azcopy_linux_amd64")
REPO_ROOT = Path(__file__).resolve().parents[2]  # tests/support/azcopy.py
#: Far above an upload of a few MB on loopback; a hung AzCopy fails the test instead.
RUN_TIMEOUT_SECONDS = 60.0


class AzCopyUnavailableError(RuntimeError):
    """AzCopy cannot be installed on this machine."""


def azcopy_dir() -> Path:
    """The npm prefix AzCopy is installed under."""
    configured = os.environ.get("BILLING_AZCOPY_DIR")
    return Path(configured) if configured else REPO_ROOT / ".cache" / "azcopy"


def installed_version(binary: Path) -> str | None:
    if not binary.is_file() or not os.access(binary, os.X_OK):
        return None
    answer = subprocess.run([str(binary), "--version"], capture_output=True, text=True)
    # "azcopy version 10.32.2"
    return answer.stdout.split()[-1] if answer.returncode == 0 and answer.stdout else None


def ensure_azcopy(prefix: Path) -> Path:
    """The AzCopy binary of the pinned version, installing it when missing."""
    if platform.system() != "Linux" or platform.machine() not in ("x86_64", "AMD64"):
        raise AzCopyUnavailableError(
            f"{PACKAGE} ships a Linux x86-64 binary only (this is "
            f"{platform.system()} {platform.machine()})"
        )
    binary = prefix / BINARY
    if installed_version(binary) == AZCOPY_VERSION:
        return binary
    npm = shutil.which("npm")
    if npm is None:
        raise AzCopyUnavailableError(
            "npm is not installed, so AzCopy cannot be (install Node, or set "
            f"BILLING_AZCOPY_DIR to a folder holding {BINARY} {AZCOPY_VERSION})"
        )
    prefix.mkdir(parents=True, exist_ok=True)
    command = [npm, "install", "--prefix", str(prefix), "--no-audit", "--no-fund"]
    install = subprocess.run(
        [*command, f"{PACKAGE}@{AZCOPY_VERSION}"], capture_output=True, text=True, check=False
    )
    if install.returncode != 0 or not binary.is_file():
        raise AzCopyUnavailableError(
            f"npm install {PACKAGE}@{AZCOPY_VERSION} into {prefix} failed:\n"
            f"{install.stderr[-2000:]}"
        )
    binary.chmod(0o755)  # the package stores the binary without its execute bit
    return binary


@dataclass(frozen=True)
class AzCopy:
    """The AzCopy binary, run with its state (logs, job plans, HOME) in a scratch folder."""

    binary: Path

    def run(self, *args: str, scratch: Path) -> subprocess.CompletedProcess[str]:
        """Run AzCopy; its logs (every failed request in full) stay in ``scratch/logs``."""
        scratch.mkdir(parents=True, exist_ok=True)
        env = {
            **os.environ,
            "HOME": str(scratch),
            "AZCOPY_LOG_LOCATION": str(scratch / "logs"),
            "AZCOPY_JOB_PLAN_LOCATION": str(scratch / "plans"),
        }
        return subprocess.run(
            [str(self.binary), *args],
            env=env,
            capture_output=True,
            text=True,
            timeout=RUN_TIMEOUT_SECONDS,
            check=False,
        )

    @staticmethod
    def log(scratch: Path) -> str:
        """The job logs of the runs in ``scratch``: what a failing test shows."""
        return "\n".join(
            log.read_text(errors="replace") for log in (scratch / "logs").glob("*.log")
        )


@pytest.fixture(scope="session")
def azcopy() -> AzCopy:
    try:
        binary = ensure_azcopy(azcopy_dir())
    except AzCopyUnavailableError as error:
        unavailable(str(error), tool="AzCopy")
    return AzCopy(binary)

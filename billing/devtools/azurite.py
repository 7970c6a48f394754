"""Azurite on demand: installed from npm, started on free loopback ports, stopped after.

Used by ``billing demo --backend azurite`` and by the test suite's ``azurite`` fixture.
Azurite is ``azurite@3.35.0`` (3.37 needs Node 22), found in ``$BILLING_AZURITE_DIR`` or
``<repo>/.cache/azurite`` and installed there with ``npm install --prefix`` when missing.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

AZURITE_VERSION = "3.35.0"
AZURITE_FLAGS = ("--skipApiVersionCheck", "--inMemoryPersistence", "--disableTelemetry", "--loose")
HOST = "127.0.0.1"
SERVICES = ("blob", "queue", "table")
#: Azurite's well-known development account and key (public, documented by Microsoft).
DEV_ACCOUNT = "devstoreaccount1"
DEV_KEY = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="
STARTUP_TIMEOUT_SECONDS = 30.0
REPO_ROOT = Path(__file__).resolve().parents[2]  # billing/devtools/azurite.py


class AzuriteUnavailableError(RuntimeError):
    """Azurite cannot be installed or started on this machine."""


@dataclass(frozen=True)
class AzuriteInfo:
    """Where a running Azurite listens."""

    blob_port: int
    queue_port: int
    table_port: int
    host: str = HOST
    account: str = DEV_ACCOUNT
    key: str = DEV_KEY

    def endpoint(self, port: int) -> str:
        return f"http://{self.host}:{port}/{self.account}"

    @property
    def connection_string(self) -> str:
        return (
            f"DefaultEndpointsProtocol=http;AccountName={self.account};AccountKey={self.key};"
            f"BlobEndpoint={self.endpoint(self.blob_port)};"
            f"QueueEndpoint={self.endpoint(self.queue_port)};"
            f"TableEndpoint={self.endpoint(self.table_port)};"
        )


def azurite_dir() -> Path:
    """The npm prefix Azurite is installed under."""
    configured = os.environ.get("BILLING_AZURITE_DIR")
    return Path(configured) if configured else REPO_ROOT / ".cache" / "azurite"


def installed_version(prefix: Path) -> str | None:
    manifest = prefix / "node_modules" / "azurite" / "package.json"
    if not manifest.is_file():
        return None
    version: str = json.loads(manifest.read_text(encoding="utf-8"))["version"]
    return version


def ensure_azurite(prefix: Path) -> Path:
    """The ``azurite`` executable of the pinned version, installing it when missing."""
    executable = prefix / "node_modules" / ".bin" / "azurite"
    if executable.exists() and installed_version(prefix) == AZURITE_VERSION:
        return executable
    node, npm = shutil.which("node"), shutil.which("npm")
    if node is None or npm is None:
        raise AzuriteUnavailableError(
            "Node.js 20+ and npm are not installed, so the Azurite tests cannot run "
            "(install Node, or set BILLING_AZURITE_DIR to a folder holding "
            f"node_modules/.bin/azurite {AZURITE_VERSION})"
        )
    prefix.mkdir(parents=True, exist_ok=True)
    command = [npm, "install", "--prefix", str(prefix), "--no-audit", "--no-fund"]
    install = subprocess.run(
        [*command, f"azurite@{AZURITE_VERSION}"], capture_output=True, text=True, check=False
    )
    if install.returncode != 0 or not executable.exists():
        raise AzuriteUnavailableError(
            f"npm install azurite@{AZURITE_VERSION} into {prefix} failed:\n{install.stderr[-2000:]}"
        )
    return executable


def free_ports(count: int) -> list[int]:
    """Ports the OS has just handed out, so probably free (a default Azurite may be running)."""
    sockets = [socket.socket(socket.AF_INET, socket.SOCK_STREAM) for _ in range(count)]
    try:
        for sock in sockets:
            sock.bind((HOST, 0))
        return [sock.getsockname()[1] for sock in sockets]
    finally:
        for sock in sockets:
            sock.close()


class AzuriteServer:
    """One Azurite process, in memory, on free loopback ports."""

    def __init__(self, executable: Path) -> None:
        self._executable = executable
        self._workspace = tempfile.TemporaryDirectory(prefix="azurite-")
        self._process: subprocess.Popen[bytes] | None = None
        self.info: AzuriteInfo | None = None

    @property
    def log_path(self) -> Path:
        return Path(self._workspace.name) / "azurite.log"

    def start(self, attempts: int = 3) -> AzuriteInfo:
        """Start and wait until all three services accept connections.

        A free port can be taken between our asking and Azurite binding it, so a failed
        start is tried again on fresh ports.
        """
        for _ in range(attempts):
            blob_port, queue_port, table_port = free_ports(len(SERVICES))
            info = AzuriteInfo(blob_port, queue_port, table_port)
            if self._try_start(info):
                self.info = info
                return info
        log = self.log_path.read_text(encoding="utf-8", errors="replace")[-2000:]
        raise AzuriteUnavailableError(f"Azurite did not start after {attempts} attempts:\n{log}")

    def _try_start(self, info: AzuriteInfo) -> bool:
        command = [
            str(self._executable),
            *("--blobHost", info.host, "--blobPort", str(info.blob_port)),
            *("--queueHost", info.host, "--queuePort", str(info.queue_port)),
            *("--tableHost", info.host, "--tablePort", str(info.table_port)),
            *AZURITE_FLAGS,
            "--silent",
        ]
        with self.log_path.open("wb") as log:
            # The workspace as working directory: Azurite writes nothing to the repository.
            self._process = subprocess.Popen(
                command, cwd=self._workspace.name, stdout=log, stderr=subprocess.STDOUT
            )
        deadline = time.monotonic() + STARTUP_TIMEOUT_SECONDS
        while time.monotonic() < deadline:
            if self._process.poll() is not None:
                return False  # most likely a port taken meanwhile
            if self._all_services_listening():
                return True
            time.sleep(0.05)
        self.stop()
        return False

    def _all_services_listening(self) -> bool:
        """Azurite logs one line per service once its server is bound and answering.

        Its own word, rather than a TCP probe, so that a stranger who grabbed one of our
        ports in the meantime is not mistaken for it.
        """
        log = self.log_path.read_text(encoding="utf-8", errors="replace")
        return log.count("successfully listening") == len(SERVICES)

    def stop(self) -> None:
        process, self._process = self._process, None
        if process is not None and process.poll() is None:
            process.terminate()
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()

    def close(self) -> None:
        self.stop()
        self._workspace.cleanup()

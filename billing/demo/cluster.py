"""Start the three roles as separate processes, as they would run in Azure, and stop them.

Each role is ``python -m billing.cli <role>`` with the demo's environment: its own data
folder (or Azurite), a fresh API key, a free port, and a folder where every process exports
its storage-request counts at exit.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import psutil

STOP_TIMEOUT_SECONDS = 15.0


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


class RoleExitedError(RuntimeError):
    """A role process of the cluster stopped while it should be running."""


@dataclass
class Cluster:
    """The role processes of one demo run."""

    env: Mapping[str, str]
    logs: Path
    processes: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict)

    def start(self, role: str, *args: str) -> None:
        self.logs.mkdir(parents=True, exist_ok=True)
        with (self.logs / f"{role}.log").open("wb") as log:
            self.processes[role] = subprocess.Popen(
                [sys.executable, "-m", "billing.cli", role, *args],
                env={**os.environ, **self.env},
                stdout=log,
                stderr=subprocess.STDOUT,
            )

    def wait_healthy(self, base_url: str, timeout: float = 60.0) -> None:
        """Wait for the initiator's health check; fail early if a role died."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            self.check_alive()
            try:
                if httpx.get(f"{base_url}/healthz", timeout=1.0).status_code == 200:
                    return
            except httpx.TransportError:
                pass
            time.sleep(0.1)
        raise TimeoutError(f"the initiator did not answer on {base_url} within {timeout:.0f} s")

    def cpu_seconds(self, role: str) -> float:
        """CPU time (user + system) the role's process and its children have used so far."""
        process = psutil.Process(self.processes[role].pid)
        total = 0.0
        for each in (process, *process.children(recursive=True)):
            try:
                times = each.cpu_times()
            except psutil.NoSuchProcess:
                continue
            total += times.user + times.system
        return total

    def check_alive(self) -> None:
        for role, process in self.processes.items():
            if process.poll() is not None:
                tail = (self.logs / f"{role}.log").read_text(errors="replace")[-3000:]
                raise RoleExitedError(f"{role} exited with {process.returncode}:\n{tail}")

    def stop(self) -> None:
        """SIGTERM every role (they stop gracefully and export their meters), then wait."""
        for process in self.processes.values():
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + STOP_TIMEOUT_SECONDS
        for process in self.processes.values():
            try:
                process.wait(max(deadline - time.monotonic(), 0.1))
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()

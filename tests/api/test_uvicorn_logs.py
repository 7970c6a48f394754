"""``billing initiator`` logs in one format: uvicorn's own records (start-up, shutdown) go
through the project's handler, not uvicorn's ``INFO:     …`` format beside it."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

from billing.demo.cluster import free_port

BILLING = str(Path(sys.executable).with_name("billing"))
#: The project's log line (shared.telemetry): a timestamp, the level, the process, the logger.
PROJECT_LINE = re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3} [A-Z]+ +\S+ [\w.]+: ")


def test_uvicorns_records_come_in_the_projects_format(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("BILLING_")}
    env |= {"BILLING_DATA_DIR": str(tmp_path / "data"), "BILLING_PORT": str(free_port())}
    process = subprocess.Popen(
        [BILLING, "initiator", "--insecure-local"],
        env=env,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    lines: list[str] = []
    try:
        assert process.stderr is not None
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            line = process.stderr.readline()
            if not line:
                break
            lines.append(line.rstrip("\n"))
            if "Application startup complete" in line:
                break
        process.send_signal(signal.SIGTERM)
        _, rest = process.communicate(timeout=30)
        lines += (rest or "").splitlines()
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    said = "\n".join(lines)
    assert any("Application startup complete" in line for line in lines), said
    assert any("Finished server process" in line for line in lines), said
    others = [line for line in lines if line.strip() and not PROJECT_LINE.match(line)]
    assert not others, said

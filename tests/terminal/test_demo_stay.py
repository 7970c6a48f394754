"""``billing demo --stay``: the demo says where its initiator answers and which variables
point the other commands at it, and keeps its roles running after its batch so that
``billing submit --wait``, ``billing top`` and the operations commands (``pricebook``,
``poison``) work against it; Ctrl-C stops it with the report. In an 80-column terminal."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import httpx

from billing.sample_batches import write_batch_file
from tests.terminal.terminal import Terminal

#: The console script, as a person types it (whichever package holds the commands).
BILLING = [str(Path(sys.executable).with_name("billing"))]
DEMO_TRANSACTIONS = 3_000
TRANSACTIONS = 5_000


def test_submit_wait_and_top_work_against_the_demo(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("BILLING_")}
    demo = Terminal(
        [*BILLING, "demo", "--transactions", str(DEMO_TRANSACTIONS), "--processes", "1", "--stay"],
        env,
        columns=80,
    )
    try:
        text = demo.read_until(
            lambda t: "Ctrl-C stops them" in t, 180, "the demo's batch done, roles kept running"
        )
        # one line each however narrow the terminal, so that they can be pasted
        found = re.search(r"billing top --url (\S+) --api-key (\S+)\r?\n", text)
        assert found is not None, text
        target = ["--url", found[1], "--api-key", found[2]]
        exports = {
            name: shlex.split(value)[0]
            for name, value in re.findall(r"export (BILLING_\w+)=(\S+)\r?\n", text)
        }
        assert set(exports) >= {"BILLING_URL", "BILLING_API_KEY", "BILLING_DATA_DIR"}, text
        sourced = re.search(r"\(or: source (\S+)\)", text)
        assert sourced is not None, text
        assert "BILLING_DATA_DIR=" in Path(sourced[1]).read_text()
        demo_env = {**env, **exports}

        # The operations commands reach the demo's store (which has the sample pricebook),
        # not an empty one in the current folder.
        for command in (["pricebook", "show"], ["poison", "list"]):
            done = subprocess.run(
                [*BILLING, *command],
                env=demo_env,
                cwd=tmp_path,
                capture_output=True,
                text=True,
                timeout=60,
                check=False,
            )
            assert done.returncode == 0, done.stderr
            assert f"store: embedded store in {exports['BILLING_DATA_DIR']}\n" in done.stderr
        assert not (tmp_path / ".billing").exists()

        batch = tmp_path / "more.csv"
        write_batch_file(batch, TRANSACTIONS, customers=100, seed=5, file_format="csv")
        # BILLING_URL and BILLING_API_KEY from the exports: no --url, no --api-key
        submit = Terminal([*BILLING, "submit", str(batch), "--wait"], demo_env)
        try:
            assert submit.wait(180) == 0, submit.text()[-3000:]
        finally:
            submit.close()
        assert re.search(r"reconciled\s*│\s*yes", submit.text())

        view = subprocess.run(
            [*BILLING, "top", "--once", *target],
            env={**env, "COLUMNS": "160"},
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        assert view.returncode == 0, view.stderr
        batches = view.stdout[view.stdout.index("Batches") :]
        assert len(re.findall(r"completed", batches)) == 2, view.stdout  # the demo's and ours
        live = httpx.get(
            f"{exports['BILLING_URL']}/dashboard/live",
            headers={"Authorization": f"Bearer {exports['BILLING_API_KEY']}"},
            timeout=30,
        ).json()
        [demo_chunks] = [
            b["batch"]["chunks"]["total"]
            for b in live["batches"]
            if b["batch"]["transactions"] == DEMO_TRANSACTIONS
        ]

        demo.send(b"\x03")
        assert demo.wait(60) == 0, demo.text()[-3000:]
        assert "result: reconciled" in demo.text()
        # The report's requests are the demo batch's (a work-queue put and a results-queue
        # put per chunk), not our batch's nor the dashboard's that came after.
        puts = re.search(r"queue\.put\s+([\d,]+)", demo.text())
        assert puts is not None, demo.text()[-3000:]
        assert int(puts[1].replace(",", "")) == 2 * demo_chunks, demo.text()[-3000:]
        assert re.search(
            rf"transactions\s+│\s+{DEMO_TRANSACTIONS:,}\s+│\s+{DEMO_TRANSACTIONS:,}", demo.text()
        )
    finally:
        demo.close()

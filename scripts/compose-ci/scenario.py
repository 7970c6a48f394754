"""The compose end-to-end scenario, run from the host against a compose project that is up.

Run by ``scripts/compose-e2e.sh`` (which starts the project); exits non-zero at the first
check that fails, saying which. Every step prints how long it took.

1. A generated batch is submitted with ``billing submit`` (the command a user runs), and
   followed through the API until it is completed and reconciled; its warehouse totals
   (transactions, quantity, id checksum, as the controller read them back from PostgreSQL)
   must equal the control totals taken at intake, and the count what was generated.
2. A larger batch is submitted; once some of its chunks are applied and before all are,
   one processor container is killed (``docker kill``, SIGKILL: its in-flight messages are
   neither finished nor given back). The batch must still complete, every chunk applied
   once, none failed, reconciled: exactly once, whatever the killed container held.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx

BILLING = str(Path(sys.executable).with_name("billing"))
POLL_SECONDS = 0.5


class ScenarioError(AssertionError):
    pass


@contextmanager
def step(name: str) -> Iterator[None]:
    started = time.monotonic()
    print(f"-- {name}", flush=True)
    yield
    print(f"   done in {time.monotonic() - started:.1f} s", flush=True)


def run(*command: str) -> str:
    result = subprocess.run(command, capture_output=True, text=True, check=False)
    if result.returncode != 0:
        raise ScenarioError(f"{' '.join(command)} exited {result.returncode}:\n{result.stderr}")
    return result.stdout


def generate(path: Path, transactions: int, seed: int) -> None:
    run(BILLING, "generate", "--transactions", str(transactions), "--out", str(path),
        "--seed", str(seed))  # fmt: skip


def submit(path: Path, url: str, api_key: str) -> str:
    """``billing submit`` from the host, as a user would; returns the batch id."""
    return run(BILLING, "submit", str(path), "--url", url, "--api-key", api_key).strip()


def status(client: httpx.Client, batch_id: str) -> dict[str, Any]:
    response = client.get(f"/batches/{batch_id}")
    response.raise_for_status()
    body: dict[str, Any] = response.json()
    return body


def wait_closed(client: httpx.Client, batch_id: str, timeout: float) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        body = status(client, batch_id)
        if body["status"] in ("completed", "failed") and body["reconciled"] is not None:
            return body
        time.sleep(POLL_SECONDS)
    raise ScenarioError(f"batch {batch_id} not closed after {timeout:.0f} s: {body}")


def check_exactly_once(body: dict[str, Any], transactions: int) -> None:
    chunks = body["chunks"]
    problems = []
    if body["status"] != "completed":
        problems.append(f"status {body['status']!r}, not 'completed'")
    if body["reconciled"] is not True:
        problems.append("not reconciled")
    if body["warehouse_totals"] != body["control_totals"]:
        problems.append(
            f"warehouse totals {body['warehouse_totals']} != control {body['control_totals']}"
        )
    if (body["warehouse_totals"] or {}).get("transactions") != transactions:
        problems.append(f"warehouse holds {body['warehouse_totals']}, generated {transactions}")
    if chunks["applied"] != chunks["total"] or chunks["failed"] or body["failed_chunks"]:
        problems.append(f"chunks {chunks}, failed {body['failed_chunks']}")
    if problems:
        raise ScenarioError(f"batch {body['batch_id']}: " + "; ".join(problems))
    print(
        f"   {body['batch_id']}: completed, reconciled; {transactions:,} transactions in "
        f"{chunks['total']} chunks; warehouse totals = control totals "
        f"{json.dumps(body['control_totals'])}; end to end "
        f"{body['timings']['end_to_end_seconds']:.1f} s",
        flush=True,
    )


def container_state(name: str) -> dict[str, Any]:
    inspected = run("docker", "inspect", "--format", "{{json .State}}", name)
    state: dict[str, Any] = json.loads(inspected)
    return state


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", required=True)
    parser.add_argument("--api-key", required=True)
    parser.add_argument("--project", required=True, help="the compose project name")
    parser.add_argument("--work", type=Path, required=True, help="a folder for batch files")
    parser.add_argument("--first", type=int, default=20_000, help="transactions in batch 1")
    parser.add_argument("--second", type=int, default=100_000, help="transactions in batch 2")
    parser.add_argument("--timeout", type=float, default=300.0, help="per batch, seconds")
    args = parser.parse_args()
    client = httpx.Client(
        base_url=args.url, headers={"Authorization": f"Bearer {args.api_key}"}, timeout=10
    )
    first, second = args.work / "batch-1.csv", args.work / "batch-2.csv"

    with step(f"batch 1: generate {args.first:,} transactions, billing submit from the host"):
        generate(first, args.first, seed=1)
        batch = submit(first, args.url, args.api_key)
    with step(f"batch 1 ({batch}): wait until completed and reconciled"):
        check_exactly_once(wait_closed(client, batch, args.timeout), args.first)

    victim = f"{args.project}-processor-1"
    with step(f"batch 2: generate {args.second:,} transactions, billing submit from the host"):
        generate(second, args.second, seed=2)
        batch = submit(second, args.url, args.api_key)
    with step(f"batch 2 ({batch}): docker kill {victim} once some chunks are applied"):
        deadline = time.monotonic() + args.timeout
        while True:
            body = status(client, batch)
            applied, total = body["chunks"]["applied"], body["chunks"]["total"]
            if applied >= max(1, total // 10):
                break
            if time.monotonic() > deadline:
                raise ScenarioError(f"batch {batch}: no chunk applied in {args.timeout:.0f} s")
            time.sleep(0.1)
        if applied >= total:
            raise ScenarioError(f"batch {batch} finished before the kill: make it larger")
        run("docker", "kill", victim)
        state = container_state(victim)
        if state["Running"]:
            raise ScenarioError(f"{victim} still runs after docker kill")
        print(
            f"   killed {victim} (exit {state['ExitCode']}) with {applied}/{total} chunks applied",
            flush=True,
        )
    with step(f"batch 2 ({batch}): wait until completed and reconciled without it"):
        check_exactly_once(wait_closed(client, batch, args.timeout), args.second)


if __name__ == "__main__":
    try:
        main()
    except ScenarioError as error:
        print(f"compose scenario FAILED: {error}", file=sys.stderr)
        sys.exit(1)

"""Every command that talks to the initiator or to storage fails in one line, not a
traceback: what it tried, what happened, what to do; exit 2 when it could not reach it.

Run as a person runs them (the console script, in a process of its own), with nothing
listening where they look: no initiator, no Azurite, no data folder.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from billing.demo.cluster import free_port
from billing.devtools.azurite import AzuriteInfo

BILLING = str(Path(sys.executable).with_name("billing"))
SAMPLE_PRICEBOOK = Path(__file__).parents[2] / "shared" / "domain" / "pricebooks" / "sample.json"
#: The storage commands, each with what it needs to run.
STORAGE_COMMANDS = [
    ["pricebook", "show"],
    ["pricebook", "upload", str(SAMPLE_PRICEBOOK)],
    ["poison", "list"],
    ["poison", "redrive"],
    ["hold"],
    ["release"],
]


def clean_env(**values: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("BILLING_")}
    env.pop("COLUMNS", None)
    return {**env, **values}


def run(args: list[str], env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [BILLING, *args], env=env, cwd=cwd, capture_output=True, text=True, timeout=120, check=False
    )


def the_error(done: subprocess.CompletedProcess[str], command: str) -> str:
    """The command's one error line, after checking nothing else went wrong."""
    assert "Traceback" not in done.stderr + done.stdout, done.stderr
    said = [line for line in done.stderr.splitlines() if line.strip()]  # a bar may end blank
    lines = [line for line in said if not line.startswith("store: ")]
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith(f"billing {command}: "), done.stderr
    return lines[0]


@pytest.mark.parametrize(
    "args",
    [
        ["submit", "{batch}"],
        ["submit", "{batch}", "--wait"],
        ["cost", "--live"],
        ["top", "--once"],
        ["status", "20261205-003146-78f91726c3d2"],
        ["status", "20261205-003146-78f91726c3d2", "--watch"],
        ["invoices", "20261205-003146-78f91726c3d2"],
    ],
    ids=" ".join,
)
def test_api_commands_without_an_initiator_say_where_they_looked(
    args: list[str], tmp_path: Path
) -> None:
    batch = tmp_path / "batch.csv"
    batch.write_text("transaction_id,customer_id,sku,quantity,region,occurred_at\n")
    nowhere = f"http://127.0.0.1:{free_port()}"  # from BILLING_URL: no --url typed

    done = run([arg.format(batch=batch) for arg in args], clean_env(BILLING_URL=nowhere), tmp_path)

    assert done.returncode == 2, done.stderr
    error = the_error(done, args[0])
    assert f"cannot reach the initiator at {nowhere}: " in error
    assert "Connection refused" in error
    assert "BILLING_URL" in error  # what to do


@pytest.mark.parametrize("args", STORAGE_COMMANDS, ids=" ".join)
def test_storage_commands_without_their_storage_account_say_which_one(
    args: list[str], tmp_path: Path
) -> None:
    # Azurite's well-known account, on ports where nothing listens.
    nowhere = AzuriteInfo(free_port(), free_port(), free_port()).connection_string

    done = run(args, clean_env(BILLING_STORAGE_CONNECTION_STRING=nowhere), tmp_path)

    assert done.returncode == 2, done.stderr
    assert "store: storage account devstoreaccount1" in done.stderr
    error = the_error(done, args[0])
    assert "cannot reach the storage account devstoreaccount1" in error
    assert "BILLING_STORAGE_CONNECTION_STRING" in error


def test_a_malformed_connection_string_is_named(tmp_path: Path) -> None:
    done = run(["poison", "list"], clean_env(BILLING_STORAGE_CONNECTION_STRING="not one"), tmp_path)

    assert done.returncode == 2, done.stderr
    error = the_error(done, "poison")
    assert "malformed" in error
    assert "BILLING_STORAGE_CONNECTION_STRING" in error


@pytest.mark.parametrize(
    "args", [["pricebook", "show"], ["poison", "list"], ["poison", "redrive"]], ids=" ".join
)
def test_reading_commands_do_not_create_a_missing_data_folder(
    args: list[str], tmp_path: Path
) -> None:
    done = run(args, clean_env(), tmp_path)  # the default store: ./.billing, not there

    assert done.returncode == 2, done.stderr
    error = the_error(done, args[0])
    assert f"no embedded store in {tmp_path / '.billing'}" in error
    assert "BILLING_DATA_DIR" in error
    assert not (tmp_path / ".billing").exists()


def test_a_writing_command_says_it_makes_a_new_store(tmp_path: Path) -> None:
    data = tmp_path / "data"

    done = run(["hold"], clean_env(BILLING_DATA_DIR=str(data)), tmp_path)

    assert done.returncode == 0, done.stderr
    assert f"store: embedded store in {data} (new: no role has used it yet)" in done.stderr
    again = run(["release"], clean_env(BILLING_DATA_DIR=str(data)), tmp_path)
    assert again.stderr.splitlines()[0] == f"store: embedded store in {data}"


def test_the_help_names_the_variables_the_url_and_key_come_from(tmp_path: Path) -> None:
    done = run(["status", "--help"], clean_env(COLUMNS="200"), tmp_path)

    for variable in ("BILLING_URL", "BILLING_HOST", "BILLING_PORT", "BILLING_API_KEY"):
        assert variable in done.stdout


def test_warehouse_upgrade_without_its_database_names_it_without_the_password(
    tmp_path: Path,
) -> None:
    url = f"postgresql+psycopg://billing:s3cret@127.0.0.1:{free_port()}/billing"

    done = run(["warehouse", "upgrade"], clean_env(BILLING_WAREHOUSE_URL=url), tmp_path)

    assert done.returncode == 2, done.stderr
    error = the_error(done, "warehouse")
    assert "cannot use the warehouse at postgresql+psycopg://billing:***@127.0.0.1" in error
    assert "s3cret" not in done.stderr
    assert "BILLING_WAREHOUSE_URL" in error


def test_a_demo_whose_role_dies_says_which_and_shows_its_log(tmp_path: Path) -> None:
    # Every role refuses this setting at start-up; the demo's own process never reads it.
    env = clean_env(BILLING_PARTITIONS="many")

    done = run(["demo", "--transactions", "100", "--processes", "1"], env, tmp_path)

    assert done.returncode == 1, done.stderr
    assert re.search(r"^billing demo: \w+ exited with 1:$", done.stderr, re.MULTILINE)
    assert "partitions" in done.stderr  # the end of the role's log
    assert "Traceback" not in done.stderr.split("exited with")[0]  # the demo's own: none

"""Each identity's data-plane roles in the Bicep are exactly what its role's code uses.

What the code uses is measured, not declared: the three roles run as separate processes of
one deployment on the embedded backend, a batch goes through them and every HTTP route
that touches storage is called, the developer's ``billing`` operator commands run too, and
each process's storage-request meter (which counts every request by kind, and blob
requests by container too, as the Azure backends count them at the transport) is read per
role. Each request needs one data action on the container or account it targets
(``tests/infra/least_privilege.py``); the roles granted in ``infra/main.bicep`` must allow
every one on a scope that contains its target, and none may be removable, or replaceable
by a narrower built-in role or by the same role on only the containers used.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterable, Iterator, Mapping
from contextlib import ExitStack, contextmanager
from datetime import UTC, datetime
from pathlib import Path

import httpx
import pytest
from azure.storage.blob import BlobClient
from typer.testing import CliRunner

from billing.cli.app import app
from billing.demo.cluster import free_port
from shared import meter
from shared.bus import open_bus
from shared.listener.poison import PoisonRecord
from shared.listener.source import poison_queue
from shared.provision import containers_for, queues_for, tables_for
from shared.settings import Settings
from shared.storage import open_storage
from tests.e2e.test_roles import answers_healthz
from tests.infra.grants import ACCOUNT, declared_grants
from tests.infra.least_privilege import Request, least_privilege_problems, needs_of
from tests.support.deployment_settings import (
    billing_environment,
    deployment_values,
    settings_factory,
)

BILLING = Path(sys.executable).with_name("billing")
TIMEOUT_SECONDS = 90.0

#: Needs that are not the code's own requests: KEDA reads the depth of the queues that
#: scale the processor and the controller, as their identity (Get Queue Metadata).
PLATFORM_NEEDS: Mapping[str, set[Request]] = {
    "processor": {("queue.count", ACCOUNT)},
    "controller": {("queue.count", ACCOUNT)},
}

#: Needs of the Azure backend that the embedded one, measured here, has no request for:
#: on Azure the initiator signs upload grants with a user delegation key it gets from
#: storage (``initiator.uploads.signers``), a request to the account; the embedded backend
#: signs them itself.
AZURE_ONLY_NEEDS: Mapping[str, set[Request]] = {
    "initiator": {("blob.delegation-key", ACCOUNT)},
}

#: What a queue listener may do beyond one short batch's run: renew a long handler's
#: message (update), defer one (update), set a poison one aside (put). A role whose code
#: runs a ``QueueListener`` needs them all.
LISTENER_REQUESTS: set[Request] = {
    (kind, ACCOUNT) for kind in ("queue.get", "queue.delete", "queue.update", "queue.put")
}
ROLE_PACKAGES = Path(__file__).parents[2]


def runs_a_queue_listener(role: str) -> bool:
    package = ROLE_PACKAGES / role
    return any("QueueListener(" in p.read_text() for p in package.rglob("*.py"))


def bicep_names(settings: Settings) -> dict[str, str]:
    """A measured deployment's container names (each carries a token of its own) → the
    names Bicep declares (the settings' defaults, ``test_names.py``); the account stays."""
    defaults = Settings(_env_file=None)  # type: ignore[call-arg]
    return dict(zip(containers_for(settings), containers_for(defaults), strict=True)) | {
        ACCOUNT: ACCOUNT
    }


def requests_in(
    kinds: Iterable[str], blobs: Iterable[tuple[str, str]], names: Mapping[str, str]
) -> set[Request]:
    """The requests of a meter's counts: by kind, and blob requests by their container
    (named as Bicep names it)."""
    blobs = list(blobs)
    assert {k for k in kinds if k.startswith("blob.")} == {k for k, _ in blobs}, (
        "the meter's blob counts by kind and by container disagree"
    )
    requests = {(kind, ACCOUNT) for kind in kinds if not kind.startswith("blob.")}
    return requests | {(kind, names[container]) for kind, container in blobs}


# --- measuring what each role does ------------------------------------------------------
@contextmanager
def role_process(
    args: list[str], env: dict[str, str], folder: Path, name: str
) -> Iterator[subprocess.Popen[bytes]]:
    log = (folder / f"{name}.log").open("wb")
    process = subprocess.Popen(
        [str(BILLING), *args], cwd=folder, env=env, stdout=log, stderr=subprocess.STDOUT
    )
    try:
        yield process
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        log.close()


def wait_for(condition: object, what: str, folder: Path) -> None:
    deadline = time.monotonic() + TIMEOUT_SECONDS
    while not condition():  # type: ignore[operator]
        if time.monotonic() > deadline:
            logs = "\n".join(p.read_text(errors="replace")[-2000:] for p in folder.glob("*.log"))
            pytest.fail(f"not {what} in time:\n{logs}")
        time.sleep(0.1)


def measure_requests(folder: Path) -> dict[str, set[Request]]:
    """principal → the storage and bus requests it made (a whole batch's worth): their kinds
    and, for blob requests, their containers."""
    port = free_port()
    values = deployment_values(
        folder, partitions=1, api_keys="least-privilege-key", port=port, provision_resources=False
    )
    settings = settings_factory(values)()
    storage, bus = open_storage(settings), open_bus(settings)
    events = open_bus(settings, settings.events_topic)
    try:  # what Bicep declares in Azure, and no more: no blob (nor the control blobs
        # provisioning writes elsewhere, which the roles then write when they find them missing)
        for name in queues_for(settings):
            storage.queue(name).create()
        for name in containers_for(settings):
            storage.container(name).create()
        for name in tables_for(settings):
            storage.table(name).create()
        bus.ensure_topic()
        events.ensure_topic()
    finally:
        events.close()
        bus.close()
        storage.close()
    base = {k: v for k, v in os.environ.items() if not k.startswith("BILLING_")}
    base |= billing_environment(values)

    def env(principal: str) -> dict[str, str]:
        return base | {meter.EXPORT_DIR_ENV: str(folder / "meter" / principal)}

    url = f"http://127.0.0.1:{port}"
    key = {"Authorization": "Bearer least-privilege-key"}
    batch = folder / "batch.csv"
    subprocess.run(
        [str(BILLING), "generate", "--transactions", "3000", "--out", str(batch)],
        check=True,
        capture_output=True,
        env=base,
    )

    with ExitStack() as running:
        initiator = running.enter_context(
            role_process(["initiator"], env("initiator"), folder, "initiator")
        )
        running.enter_context(
            role_process(["processor", "--processes", "1"], env("processor"), folder, "processor")
        )
        running.enter_context(role_process(["controller"], env("controller"), folder, "controller"))

        def healthy() -> bool:
            assert initiator.poll() is None, "the initiator exited"
            return answers_healthz(url)

        wait_for(healthy, "healthy", folder)
        accepted = httpx.post(
            f"{url}/batches", content=batch.read_bytes(), headers=key, timeout=30
        ).json()
        status_url = f"{url}/batches/{accepted['batch_id']}"

        def closed() -> bool:
            status = httpx.get(status_url, headers=key, timeout=10).json()
            return bool(status["status"] == "completed" and status.get("reconciled"))

        wait_for(closed, "completed and reconciled", folder)
        for path in (
            f"/batches/{accepted['batch_id']}/invoices",
            "/pricebook",
            "/metrics",
            "/dashboard/data",
            "/dashboard/live",  # starts the sampler: queue depths while someone watches
            "/control/gate",
        ):
            assert httpx.get(f"{url}{path}", headers=key, timeout=10).status_code == 200, path
        for path in ("/control/hold", "/control/release"):
            assert httpx.post(f"{url}{path}", headers=key, timeout=10).status_code == 200, path
        # An upload the initiator takes and rejects: it writes, reads and deletes the blob
        # (on Azure the write is the sender's, under the initiator's delegated rights).
        grant = httpx.post(f"{url}/uploads", headers=key, timeout=10).json()
        upload_url = str(httpx.URL(url).join(grant["upload_url"]))
        BlobClient.from_blob_url(upload_url).upload_blob(b"not,a,batch\n")
        taken = httpx.post(
            f"{url}/batches", json={"upload": grant["blob"]}, headers=key, timeout=30
        )
        assert taken.status_code == 400, taken.text

        developer = operator_requests(base, folder)
    measured = {
        principal: requests_in(
            meter.collect_exports(folder / "meter" / principal),
            meter.collect_container_exports(folder / "meter" / principal),
            bicep_names(settings),
        )
        for principal in ("initiator", "processor", "controller")
    }
    return measured | {"developer": developer}


def operator_requests(env: dict[str, str], folder: Path) -> set[Request]:
    """The requests the developer's operator commands make (run in this process,
    whose meter counts nothing else meanwhile)."""
    pricebook = folder / "pricebook.json"
    runner = CliRunner()
    settings = Settings(_env_file=None, **_values_of(env))  # type: ignore[call-arg, arg-type]
    source = settings.work_queue("low", 0)
    storage = open_storage(settings)
    try:  # one poisoned message, so that the redrive has something to send back
        record = PoisonRecord(
            source_queue=source,
            message_id="m-1",
            dequeue_count=5,
            content='{"not": "a work item"}',
            last_error="ValueError: example",
            poisoned_at=datetime.now(UTC),
        )
        storage.queue(poison_queue(source)).send(record.model_dump_json())
    finally:
        storage.close()
    before, blobs_before = meter.snapshot(), meter.container_snapshot()
    with pytest.MonkeyPatch.context() as patch:
        for name in [k for k in os.environ if k.startswith("BILLING_")]:
            patch.delenv(name)
        for name, value in env.items():
            if name.startswith("BILLING_"):
                patch.setenv(name, value)
        patch.chdir(folder)
        for args in (
            ["hold"],
            ["release"],
            ["pricebook", "show"],
            ["poison", "list"],
            ["poison", "redrive", "--batch", "another-batch"],  # skips it: visibility reset
            ["poison", "redrive"],
            ["events", "tail", "--idle", "0.5"],
        ):
            result = runner.invoke(app, args)
            assert result.exit_code == 0, result.output
            if args == ["pricebook", "show"]:
                pricebook.write_text(result.stdout)
        result = runner.invoke(app, ["pricebook", "upload", str(pricebook)])
        assert result.exit_code == 0, result.output
    return requests_in(
        meter.diff(meter.snapshot(), before),
        meter.diff(meter.container_snapshot(), blobs_before),
        bicep_names(settings),
    )


def _values_of(env: Mapping[str, str]) -> dict[str, str]:
    return {
        k.removeprefix("BILLING_").lower(): v for k, v in env.items() if k.startswith("BILLING_")
    }


@pytest.fixture(scope="module")
def requests_by_role(tmp_path_factory: pytest.TempPathFactory) -> dict[str, set[Request]]:
    return measure_requests(tmp_path_factory.mktemp("least-privilege"))


@pytest.mark.parametrize("principal", ["initiator", "processor", "controller", "developer"])
def test_granted_data_roles_are_the_least_that_allow_what_the_code_does(
    principal: str, requests_by_role: dict[str, set[Request]]
) -> None:
    requests = requests_by_role[principal] | PLATFORM_NEEDS.get(principal, set())
    requests |= AZURE_ONLY_NEEDS.get(principal, set())
    if principal != "developer" and runs_a_queue_listener(principal):
        requests |= LISTENER_REQUESTS
    print(f"{principal}: {sorted(requests)}")
    assert requests, f"{principal} made no requests: the measurement is broken"
    grants = declared_grants()[principal]
    problems = least_privilege_problems(principal, needs_of(requests, principal), grants)
    assert not problems, "\n".join(problems)

"""Each identity's data-plane roles in the Bicep are exactly what its role's code uses.

What the code uses is measured, not declared: the three roles run as separate processes of
one deployment on the embedded backend, a batch goes through them and every HTTP route
that touches storage is called, the developer's ``billing`` operator commands run too, and
each process's storage-request meter (which counts every request by kind, as the Azure
backends count them at the transport) is read per role. Each kind of request needs one
data action (the Azure Storage and Service Bus authorisation rules); the roles granted in
``infra/main.bicep`` must allow every one, and none may be removable or replaceable by a
narrower built-in role that would still allow them.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping
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
from shared.provision import ensure_resources
from shared.settings import Settings
from shared.storage import open_storage
from tests.e2e.test_roles import answers_healthz
from tests.infra.grants import BuiltInRole, builtin_roles, declared_grants
from tests.support.deployment_settings import (
    billing_environment,
    deployment_values,
    settings_factory,
)

BILLING = Path(sys.executable).with_name("billing")
TIMEOUT_SECONDS = 90.0

STORAGE = "Microsoft.Storage/storageAccounts"
BLOB = f"{STORAGE}/blobServices/containers/blobs"
QUEUE_MESSAGES = f"{STORAGE}/queueServices/queues/messages"
ENTITIES = f"{STORAGE}/tableServices/tables/entities"

#: The data action each kind of request (``shared.meter``) needs.
ACTIONS: Mapping[str, tuple[str, str]] = {
    "blob.get": ("storage", f"{BLOB}/read"),
    "blob.head": ("storage", f"{BLOB}/read"),
    "blob.list": ("storage", f"{BLOB}/read"),
    "blob.put": ("storage", f"{BLOB}/write"),
    "blob.delete": ("storage", f"{BLOB}/delete"),
    # Get User Delegation Key: the key an upload grant's SAS is signed with.
    "blob.delegation-key": (
        "storage",
        "Microsoft.Storage/storageAccounts/blobServices/generateUserDelegationKey/action",
    ),
    "queue.put": ("storage", f"{QUEUE_MESSAGES}/add/action"),
    "queue.get": ("storage", f"{QUEUE_MESSAGES}/process/action"),
    "queue.delete": ("storage", f"{QUEUE_MESSAGES}/process/action"),
    "queue.update": ("storage", f"{QUEUE_MESSAGES}/write"),
    "queue.peek": ("storage", f"{QUEUE_MESSAGES}/read"),
    "queue.count": ("storage", f"{QUEUE_MESSAGES}/read"),  # Get Queue Metadata
    "queue.clear": ("storage", f"{QUEUE_MESSAGES}/delete"),
    # The meter counts every table write as one kind: insert, update, upsert and delete.
    "table.read": ("storage", f"{ENTITIES}/read"),
    "table.write": ("storage", f"{ENTITIES}/write"),
    "table.write-delete": ("storage", f"{ENTITIES}/delete"),
    "bus.send": ("servicebus", "Microsoft.ServiceBus/namespaces/topics/send/action"),
    "bus.receive": ("servicebus", "Microsoft.ServiceBus/namespaces/topics/receive/action"),
}

#: Requests that go to the batch-events topic, where the Bicep grants roles on that topic
#: only ("servicebus-events"): every send of the controller is its relay publishing an event
#: (its namespace grant lets it receive only), and every receive of the developer is
#: ``billing events tail`` (its namespace grant lets it send only). The meter counts bus
#: requests without their topic, so this is declared here rather than measured.
ON_EVENTS_TOPIC: set[tuple[str, str]] = {("controller", "bus.send"), ("developer", "bus.receive")}

#: Needs that are not the code's own requests: KEDA reads the depth of the queues that
#: scale the processor and the controller, as their identity (Get Queue Metadata).
PLATFORM_NEEDS: Mapping[str, set[str]] = {
    "processor": {"queue.count"},
    "controller": {"queue.count"},
}

#: Needs of the Azure backend that the embedded one, measured here, has no request for:
#: on Azure the initiator signs upload grants with a user delegation key it gets from
#: storage (``initiator.uploads.signers``); the embedded backend signs them itself.
AZURE_ONLY_NEEDS: Mapping[str, set[str]] = {"initiator": {"blob.delegation-key"}}

#: What a queue listener may do beyond one short batch's run: renew a long handler's
#: message (update), defer one (update), set a poison one aside (put). A role whose code
#: runs a ``QueueListener`` needs them all.
LISTENER_KINDS = {"queue.get", "queue.delete", "queue.update", "queue.put"}
ROLE_PACKAGES = Path(__file__).parents[2]


def runs_a_queue_listener(role: str) -> bool:
    package = ROLE_PACKAGES / role
    return any("QueueListener(" in p.read_text() for p in package.rglob("*.py"))


def needed_actions(kinds: set[str], principal: str = "") -> dict[str, set[str]]:
    """service → data actions, for the request kinds a role made (a request made for a
    caller, ``queue.count@dashboard``, needs what the request itself needs)."""
    kinds = {meter.request_kind(kind) for kind in kinds}
    unknown = kinds - set(ACTIONS)
    assert not unknown, f"requests of kinds no data action is known for: {sorted(unknown)}"
    needs: dict[str, set[str]] = {}
    for kind in kinds:
        service, action = ACTIONS[kind]
        if (principal, kind) in ON_EVENTS_TOPIC:
            service = "servicebus-events"
        needs.setdefault(service, set()).add(action)
        if kind == "table.write":
            needs[service].add(ACTIONS["table.write-delete"][1])
    return needs


def allowed(roles: list[BuiltInRole], action: str) -> bool:
    return any(role.allows(action) for role in roles)


def least_privilege_problems(
    principal: str, needs: dict[str, set[str]], grants: dict[str, list[str]]
) -> list[str]:
    known = builtin_roles()
    problems = []
    for service in sorted(set(needs) | set(grants)):
        wanted = needs.get(service, set())
        roles = [known[role_id] for role_id in grants.get(service, [])]
        if not wanted and roles:
            problems.append(f"{principal}: {service} roles granted but never used: {roles}")
        for action in sorted(wanted):
            if not allowed(roles, action):
                problems.append(f"{principal}: {action} is used but not granted")
        for role in roles:
            others = [r for r in roles if r is not role]
            if all(allowed(others, action) for action in wanted):
                problems.append(f"{principal}: {role.name} adds nothing the others lack")
                continue
            for narrower in known.values():
                if narrower.narrower_than(role) and all(
                    allowed([*others, narrower], action) for action in wanted
                ):
                    problems.append(f"{principal}: {role.name} could be {narrower.name}")
    return problems


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


def measure_requests(folder: Path) -> dict[str, set[str]]:
    """principal → the kinds of storage and bus requests it made (a whole batch's worth)."""
    port = free_port()
    values = deployment_values(
        folder, partitions=1, api_keys="least-privilege-key", port=port, provision_resources=False
    )
    settings = settings_factory(values)()
    storage, bus = open_storage(settings), open_bus(settings)
    events = open_bus(settings, settings.events_topic)
    try:  # what Bicep declares in Azure: the roles create nothing
        ensure_resources(settings.model_copy(update={"provision_resources": True}), storage, bus)
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
        principal: set(meter.collect_exports(folder / "meter" / principal))
        for principal in ("initiator", "processor", "controller")
    }
    return measured | {"developer": developer}


def operator_requests(env: dict[str, str], folder: Path) -> set[str]:
    """The kinds of requests the developer's operator commands make (run in this process,
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
    before = meter.snapshot()
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
    return set(meter.diff(meter.snapshot(), before))


def _values_of(env: Mapping[str, str]) -> dict[str, str]:
    return {
        k.removeprefix("BILLING_").lower(): v for k, v in env.items() if k.startswith("BILLING_")
    }


@pytest.fixture(scope="module")
def requests_by_role(tmp_path_factory: pytest.TempPathFactory) -> dict[str, set[str]]:
    return measure_requests(tmp_path_factory.mktemp("least-privilege"))


@pytest.mark.parametrize("principal", ["initiator", "processor", "controller", "developer"])
def test_granted_data_roles_are_the_least_that_allow_what_the_code_does(
    principal: str, requests_by_role: dict[str, set[str]]
) -> None:
    kinds = requests_by_role[principal] | PLATFORM_NEEDS.get(principal, set())
    kinds |= AZURE_ONLY_NEEDS.get(principal, set())
    if principal != "developer" and runs_a_queue_listener(principal):
        kinds |= LISTENER_KINDS
    print(f"{principal}: {sorted(kinds)}")
    assert kinds, f"{principal} made no requests: the measurement is broken"
    grants = declared_grants()[principal]
    problems = least_privilege_problems(principal, needed_actions(kinds, principal), grants)
    assert not problems, "\n".join(problems)


def test_the_check_catches_a_missing_and_a_broader_role() -> None:
    known = {role.name: role.id for role in builtin_roles().values()}
    needs = needed_actions({"queue.put", "bus.send"})
    too_little = {"storage": [], "servicebus": [known["Azure Service Bus Data Sender"]]}
    too_much = {
        "storage": [known["Storage Queue Data Contributor"]],
        "servicebus": [known["Azure Service Bus Data Owner"]],
    }
    assert least_privilege_problems("x", needs, too_little) == [
        f"x: {QUEUE_MESSAGES}/add/action is used but not granted"
    ]
    assert sorted(least_privilege_problems("x", needs, too_much)) == [
        "x: Azure Service Bus Data Owner could be Azure Service Bus Data Sender",
        "x: Storage Queue Data Contributor could be Storage Queue Data Message Sender",
    ]

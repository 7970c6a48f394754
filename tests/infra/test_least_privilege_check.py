"""The least-privilege check itself, on made-up needs and grants: it reports a missing
action, a wider role than needed, and a grant on the wrong scope or on a container never
used (``tests/infra/least_privilege.py``)."""

from __future__ import annotations

from tests.infra.grants import ACCOUNT, Grant
from tests.infra.least_privilege import (
    BLOB,
    QUEUE_MESSAGES,
    least_privilege_problems,
    needs_of,
    role_named,
)


def grant(service: str, role: str, scope: str = ACCOUNT) -> Grant:
    return Grant(service, scope, role_named(role))


def test_the_check_catches_a_missing_and_a_broader_role() -> None:
    needs = needs_of({("queue.put", ACCOUNT), ("bus.send", ACCOUNT)})
    too_little = [grant("servicebus", "Azure Service Bus Data Sender")]
    too_much = [
        grant("storage", "Storage Queue Data Contributor"),
        grant("servicebus", "Azure Service Bus Data Owner"),
    ]
    assert least_privilege_problems("x", needs, too_little) == [
        f"x: {QUEUE_MESSAGES}/add/action on the account is used but not granted"
    ]
    assert sorted(least_privilege_problems("x", needs, too_much)) == [
        "x: Azure Service Bus Data Owner could be Azure Service Bus Data Sender",
        "x: Storage Queue Data Contributor on the account could be "
        "Storage Queue Data Message Sender",
    ]


def test_the_check_catches_a_container_grant_too_weak_too_strong_or_unused() -> None:
    needs = needs_of(
        {
            ("blob.get", "results"),
            ("blob.put", "results"),  # only read there: a write not granted
            ("blob.get", "payloads"),  # contributor there: could be reader
            ("blob.delegation-key", ACCOUNT),  # a container grant does not cover it
        }
    )
    grants = [
        grant("storage", "Storage Blob Data Reader", "results"),
        grant("storage", "Storage Blob Data Contributor", "payloads"),
        grant("storage", "Storage Blob Data Contributor", "control"),  # never used there
    ]
    assert least_privilege_problems("x", needs, grants) == [
        "x: Microsoft.Storage/storageAccounts/blobServices/generateUserDelegationKey/action "
        "on the account is used but not granted",
        f"x: {BLOB}/write on container results is used but not granted",
        "x: Storage Blob Data Contributor on container payloads could be Storage Blob Data Reader",
        "x: Storage Blob Data Contributor on container control is granted but never used",
    ]


def test_the_check_catches_an_account_grant_that_could_be_on_containers() -> None:
    needs = needs_of({("blob.put", "incoming"), ("blob.get", "payloads")})
    on_the_account = [grant("storage", "Storage Blob Data Contributor")]
    assert least_privilege_problems("x", needs, on_the_account) == [
        "x: Storage Blob Data Contributor on the account could be on incoming, payloads only"
    ]
    # A need on the account itself (a user delegation key) keeps a narrower role there.
    needs |= needs_of({("blob.delegation-key", ACCOUNT)})
    assert least_privilege_problems("x", needs, on_the_account) == [
        "x: Storage Blob Data Contributor on the account could be on incoming, payloads only, "
        "with Storage Blob Delegator on the account"
    ]
    scoped = [
        grant("storage", "Storage Blob Delegator"),
        grant("storage", "Storage Blob Data Contributor", "incoming"),
        grant("storage", "Storage Blob Data Reader", "payloads"),
    ]
    assert least_privilege_problems("x", needs, scoped) == []

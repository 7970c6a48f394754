"""A batch published by the initiator's code is rated by a worker, checked against a reference.

Runs on the embedded backend and on Azurite (storage; the trigger bus is embedded).
"""

from __future__ import annotations

import hashlib
from collections import defaultdict

from shared.contracts.chunk_result import decode_result
from shared.domain.charges import INVOICE_SUMS
from tests.processor.conftest import WorkerStarter
from tests.processor.deployment import Deployment, Row, wait_until
from tests.processor.reference import TIE_BOOK
from tests.support.reference_rater import FIGURES, reference_charge

CHUNKS: list[list[Row]] = [
    [
        ("alice", "TIE", 5, "EU"),  # discount tie 2.5 → 2
        ("alice", "TIE", 7, "EU"),  # discount tie 3.5 → 4
        ("bob", "HALF", 1, "EU"),  # tax tie 2.5 → 2
        ("bob", "HALF", 3, "EU"),  # tax tie 7.5 → 8
        ("carol", "TIE", 4, "ZERO"),  # one below the tier, zero tax
        ("carol", "TIE", 100, "US"),  # exactly at the second tier
    ],
    [
        ("alice", "WIDGET", 1_000_000, "US"),  # the largest quantity allowed
        ("bob", "WIDGET", 999, "US"),  # one below the tier
        ("bob", "WIDGET", 1000, "ZERO"),  # at the tier, zero tax
        ("dave", "HALF", 1, "ZERO"),
    ],
]


def test_the_reference_itself_on_hand_computed_figures() -> None:
    charge = reference_charge(TIE_BOOK, "TIE", 5, "EU")
    assert charge.figures() == {"gross": 25, "discount": 2, "net": 23, "tax": 2, "total": 25}
    assert (charge.unit_price, charge.ties) == (5, 1)
    charge = reference_charge(TIE_BOOK, "HALF", 3, "EU")
    assert charge.figures() == {"gross": 75, "discount": 0, "net": 75, "tax": 8, "total": 83}
    assert charge.ties == 1
    # 1,000,000 x 12.34 = 1,234,000,000 ct; 7.5 % off = 92,550,000; 7.25 % tax on the rest
    charge = reference_charge(TIE_BOOK, "WIDGET", 1_000_000, "US")
    assert charge.figures()["net"] == 1_141_450_000
    assert charge.figures()["tax"] == 82_755_125  # 1,141,450,000 x 0.0725 exactly


def test_a_published_batch_is_rated_into_result_blobs_that_match_the_reference(
    any_deployment: Deployment, start_worker: WorkerStarter
) -> None:
    deployment = any_deployment
    version = deployment.upload_pricebook(TIE_BOOK)
    batch_id = deployment.publish(CHUNKS, pricebook_version=version, priority="high")
    worker = start_worker(deployment)

    assert wait_until(lambda: len(deployment.results()) == len(CHUNKS))
    assert wait_until(lambda: deployment.work_depth() == 0)  # deleted after handling

    expected = {
        f"{batch_id}-{line}": row
        for line, row in enumerate((row for chunk in CHUNKS for row in chunk), start=2)
    }
    results_container = deployment.storage.container(deployment.settings.results_container)
    seen_ties = 0
    chunk_sums: dict[int, dict[str, int]] = defaultdict(lambda: dict.fromkeys(FIGURES, 0))
    for result in sorted(deployment.results(), key=lambda r: r.chunk):
        assert (result.batch_id, result.processor) == (batch_id, worker.instance_id)
        blob = results_container.get(result.result_blob).data
        assert hashlib.sha256(blob).hexdigest() == result.sha256
        rated = decode_result(blob)
        assert rated.pricebook_version == version
        assert len(rated.charges) == result.transactions == len(CHUNKS[result.chunk])
        for charge in (row.charge for row in rated.charges):
            customer, sku, quantity, region = expected.pop(charge.transaction_id)
            reference = reference_charge(TIE_BOOK, sku, quantity, region)
            figures = reference.figures()
            seen_ties += reference.ties
            actual = {name: getattr(charge, name) for name in FIGURES}
            assert actual == figures, charge.transaction_id
            assert (charge.customer_id, charge.quantity) == (customer, quantity)
            for name in FIGURES:
                chunk_sums[result.chunk][name] += figures[name]
        # The chunk's invoice sums: its lines and quantity, then every figure, summed.
        sent = dict(zip(INVOICE_SUMS, rated.invoice_sums, strict=True))
        assert sent["lines"] == len(rated.charges)
        assert sent["quantity"] == sum(row.charge.quantity for row in rated.charges)
        assert {name: sent[name] for name in FIGURES} == chunk_sums[result.chunk]
    assert expected == {}  # every transaction was rated exactly once
    assert seen_ties >= 4

"""The integer rater against the Decimal rater, on the same chunks, in one run.

    python -m bench.rating [--quick] [--transactions N]

A generated batch (``billing demo``'s: CSV, 500 customers, seed 7) goes through the
production parser and is cut into chunks of the default size; each chunk's payload rows are
what a processor decodes from its blob. Two measurements, CPU time (``process_time``), best
of a few rounds, the two raters alternating:

* **rating**: the Decimal rater (:class:`processor.rating.Rater` per transaction, then
  ``subtotals``) against :meth:`processor.integer_rater.IntegerRater.rate_rows`, which also
  builds the result rows;
* **chunk**: everything a processor does to one chunk between the blob get and the blob put,
  the former way (``decode_chunk`` → Decimal rating → ``encode_result``) against the
  processor's way now (``decode_chunk_rows`` → ``rate_rows`` → ``encode_result_rows``: rows
  that stay rows, timestamps left as text).
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Sequence
from typing import Any

from bench.deployment import batch_file
from bench.report import Report, base_parser
from initiator.acceptance import chunks_of
from initiator.intake import parse_batch
from processor.integer_rater import IntegerRater
from processor.rating import Rater
from shared.contracts.chunk_payload import (
    NumberedTransaction,
    decode_chunk,
    decode_chunk_rows,
    encode_chunk,
)
from shared.contracts.chunk_result import encode_result, encode_result_rows
from shared.domain.charges import subtotals
from shared.domain.pricebook import Pricebook, sample_pricebook
from shared.settings import Settings


def main(argv: Sequence[str] | None = None) -> int:
    parser = base_parser("integer rater vs Decimal rater, per transaction and per chunk")
    parser.add_argument("--transactions", type=int, default=None)
    args = parser.parse_args(argv)
    transactions: int = args.transactions or (4_000 if args.quick else 200_000)
    rounds = 1 if args.quick else 5
    chunk_size = Settings.model_fields["chunk_size"].default
    report = Report(benchmark="rating", quick=args.quick)

    book = sample_pricebook()
    print(f"  parsing {transactions:,} transactions", file=sys.stderr)
    chunks = _chunks(book, transactions, chunk_size)
    blobs = [encode_chunk("bench", index, rows) for index, rows in enumerate(chunks)]
    payload_rows = [decode_chunk_rows(blob).rows for blob in blobs]
    transactions_in = [[tx for _, tx in rows] for rows in chunks]
    decimal, integer = Rater(book), IntegerRater(book)

    def decimal_rating() -> None:
        for txs in transactions_in:
            subtotals([decimal.rate(tx) for tx in txs])

    def integer_rating() -> None:
        for rows in payload_rows:
            integer.rate_rows(rows)

    def decimal_chunk() -> None:
        for index, blob in enumerate(blobs):
            payload = decode_chunk(blob)
            charges = [(tx.occurred_at, decimal.rate(tx)) for _, tx in payload.rows]
            encode_result(
                batch_id="bench",
                chunk=index,
                currency=book.currency,
                pricebook_version="v",
                charges=charges,
                subtotals=subtotals(charge for _, charge in charges),
            )

    def integer_chunk() -> None:
        for index, blob in enumerate(blobs):
            rows, sums = integer.rate_rows(decode_chunk_rows(blob).rows)
            encode_result_rows(
                batch_id="bench",
                chunk=index,
                currency=book.currency,
                pricebook_version="v",
                rows=rows,
                invoice_sums=sums,
            )

    print("  timing", file=sys.stderr)
    timings = _best_cpu(
        {
            "decimal_rating": decimal_rating,
            "integer_rating": integer_rating,
            "decimal_chunk": decimal_chunk,
            "integer_chunk": integer_chunk,
        },
        rounds,
    )
    per_tx = {name: seconds * 1e6 / transactions for name, seconds in timings.items()}
    rating_ratio = timings["decimal_rating"] / timings["integer_rating"]
    chunk_ratio = timings["decimal_chunk"] / timings["integer_chunk"]
    report.table(
        f"{transactions:,} transactions in chunks of {chunk_size:,}; CPU µs per transaction, "
        f"best of {rounds}",
        ["step", "Decimal objects", "integer rows", "Decimal / integer"],
        [
            ["rate + subtotals", per_tx["decimal_rating"], per_tx["integer_rating"], rating_ratio],
            [
                "whole chunk: payload blob → result blob (no storage)",
                per_tx["decimal_chunk"],
                per_tx["integer_chunk"],
                chunk_ratio,
            ],
        ],
    )
    for name, value in per_tx.items():
        report.figure(f"{name}.us_per_transaction", value)
    report.figure("rating.decimal_over_integer", rating_ratio)
    report.figure("chunk.decimal_over_integer", chunk_ratio)
    report.conclude(
        f"the integer rater rates {rating_ratio:.1f}x faster than the Decimal one "
        f"({per_tx['integer_rating']:.2f} vs {per_tx['decimal_rating']:.2f} µs per "
        f"transaction, result rows included); a whole chunk costs {chunk_ratio:.1f}x less"
    )
    report.emit(args.json)
    return 0


def _chunks(book: Pricebook, transactions: int, chunk_size: int) -> list[list[NumberedTransaction]]:
    data = batch_file(transactions)
    reader = parse_batch([data], content_type="text/csv", content_encoding=None, pricebook=book)
    with reader:
        chunks = list(chunks_of(reader, chunk_size))
    if reader.rejection() is not None:
        raise RuntimeError(f"the benchmark's batch was rejected: {reader.rejection()}")
    return chunks


def _best_cpu(runs: dict[str, Callable[[], Any]], rounds: int) -> dict[str, float]:
    """Best CPU seconds of each run over ``rounds`` rounds, the runs interleaved."""
    best = dict.fromkeys(runs, float("inf"))
    for _ in range(rounds):
        for name, run in runs.items():
            started = time.process_time()
            run()
            best[name] = min(best[name], time.process_time() - started)
    return best


if __name__ == "__main__":
    raise SystemExit(main())

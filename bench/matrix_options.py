"""The command-line options that choose the shape matrix (:mod:`bench.matrix`): which
shapes, their overrides, the storage latencies and the rounds; shared by
:mod:`bench.end_to_end` and :mod:`bench.celery_reference`."""

from __future__ import annotations

import argparse
from dataclasses import replace

from bench.shapes import MATRIX, SPELLINGS, Shape


def add_shape_options(parser: argparse.ArgumentParser) -> None:
    """The options that choose the batch's shape, the matrix and the storage latency."""
    group = parser.add_argument_group("batch shape (bench/shapes.py; any of these runs the matrix)")
    group.add_argument("--matrix", action="store_true", help="every shape of bench.shapes.MATRIX")
    group.add_argument(
        "--shape", action="append", choices=sorted(MATRIX), help="a named shape (repeatable)"
    )
    group.add_argument("--customers", type=int, help="override: customers per batch")
    group.add_argument("--skus", type=int, help="override: SKUs in the generated pricebook")
    group.add_argument("--tier-share", type=float, help="override: share of SKUs with 2 tiers")
    group.add_argument("--regions", type=int, help="override: regions in the pricebook")
    group.add_argument("--timestamps", choices=SPELLINGS, help="override: occurred_at spelling")
    group.add_argument("--format", choices=("csv", "jsonl"), help="override: file format")
    group.add_argument("--gzip", action=argparse.BooleanOptionalAction, help="override: gzip")
    group.add_argument(
        "--storage-latency-ms",
        type=float,
        nargs="+",
        default=None,
        help="hold every storage request this long at the counting proxy; several values "
        "run side by side (e.g. 0 10); needs Azurite",
    )


def add_rounds_option(parser: argparse.ArgumentParser) -> None:
    """``--rounds``: how many times each comparison runs, alternating which side goes first."""
    parser.add_argument(
        "--rounds",
        type=int,
        default=None,
        help="rounds of each comparison, alternating which runs first; the median round is "
        "reported (default 3, 1 with --quick; the shape matrix: 1)",
    )


_OVERRIDES = {
    "customers": "customers",
    "skus": "skus",
    "tier_share": "tier_share",
    "regions": "regions",
    "timestamps": "timestamps",
    "format": "file_format",
    "gzip": "gzip",
}


def wants_shapes(args: argparse.Namespace) -> bool:
    """Whether the options ask for the shape matrix rather than the benchmark's own run."""
    return bool(
        args.matrix
        or args.shape
        or args.storage_latency_ms
        or any(getattr(args, option) is not None for option in _OVERRIDES)
    )


def shapes_from(args: argparse.Namespace, transactions: int) -> list[Shape]:
    """The shapes the options name, overrides applied, at ``transactions`` each."""
    names = args.shape or (sorted(MATRIX, key=list(MATRIX).index) if args.matrix else ["base"])
    changes = {
        field: getattr(args, option)
        for option, field in _OVERRIDES.items()
        if getattr(args, option) is not None
    }
    shapes = []
    for name in names:
        shape = MATRIX[name].resized(transactions)
        if changes:
            shape = replace(shape, name=f"{name}*", **changes)
        shapes.append(shape)
    return shapes

"""Intake of batch files: streaming parse and validation of CSV / JSON Lines.

Start at :func:`parse_batch`; the modules follow the pipeline in ``reader.py``'s docstring.
"""

from initiator.intake.duplicates import Duplicate, DuplicateDetector
from initiator.intake.fields import REQUIRED_FIELDS, CodeBook
from initiator.intake.media import BatchFormat
from initiator.intake.problems import BatchRejected, Problem
from initiator.intake.reader import BatchReader, parse_batch

__all__ = [
    "REQUIRED_FIELDS",
    "BatchFormat",
    "BatchReader",
    "BatchRejected",
    "CodeBook",
    "Duplicate",
    "DuplicateDetector",
    "Problem",
    "parse_batch",
]

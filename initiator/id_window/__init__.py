"""Refusing a batch whose transaction ids were billed in another batch within the window.

Opt-in (``BILLING_DUPLICATE_TRANSACTION_IDS``): the fingerprints of a batch's ids
(:mod:`.fingerprints`), one index blob per accepted batch (:mod:`.index`), and the check
against the other live batches of the duplicate-body window (:mod:`.window`). Why this
shape: docs/decisions/0080-transaction-id-window-on-disk.md.
"""

from initiator.id_window.fingerprints import FingerprintPartitions
from initiator.id_window.window import DuplicateTransactionIdsError, IdWindow

__all__ = ["DuplicateTransactionIdsError", "FingerprintPartitions", "IdWindow"]

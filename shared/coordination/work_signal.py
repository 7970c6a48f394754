"""The work signal: one small blob whose ETag moves whenever work may have appeared.

An idle processor has retired every dequeue thread and waits for the push trigger. A lost
trigger must not strand work, but looking at every work queue's depth each minute costs a
request per queue (12 with the defaults). So whoever puts work on a work queue without a
processor watching — the intake, once a batch's work items are sent; ``billing poison
redrive``; ``billing release``/``hold``, whose broadcast may be lost as well — rewrites
this blob *after* the fact, and an idle processor reads only its ETag (one ``HEAD``) on
each safety tick: a new ETag means "look at the queues (and the gate) now".

The blob is written at provisioning, and created by the first reader that finds it
missing (a deployment whose resources are declared elsewhere), so reads do not answer 404
by design. Its content is informative only (who touched it, when); readers use the ETag.
"""

from __future__ import annotations

import contextlib
import json
import logging
from datetime import UTC, datetime

from azure.core.exceptions import ResourceExistsError, ResourceNotFoundError

from shared.storage.ports import BlobContainer

WORK_SIGNAL_BLOB = "signals/work.json"

log = logging.getLogger(__name__)


def _document(reason: str) -> bytes:
    return json.dumps({"reason": reason, "at": datetime.now(UTC).isoformat()}).encode()


def signal_work(control: BlobContainer, reason: str) -> None:
    """Move the signal's ETag on (one unconditional write: any writer's change will do)."""
    control.put(WORK_SIGNAL_BLOB, _document(reason))


def ensure_work_signal(control: BlobContainer) -> None:
    """Create the signal if it does not exist yet (never moves an existing one's ETag)."""
    with contextlib.suppress(ResourceExistsError):
        control.put(WORK_SIGNAL_BLOB, _document("created"), create_only=True)


def work_signal_version(control: BlobContainer) -> str:
    """The signal's current ETag (one ``HEAD``); creates the signal if it is missing."""
    try:
        return control.head(WORK_SIGNAL_BLOB).etag
    except ResourceNotFoundError:
        log.info("work signal %s/%s missing: creating it", control.name, WORK_SIGNAL_BLOB)
        ensure_work_signal(control)
        return control.head(WORK_SIGNAL_BLOB).etag

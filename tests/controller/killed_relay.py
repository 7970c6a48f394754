"""A controller process that SIGKILLs itself around its first event publish.

``python -m tests.controller.killed_relay SETTINGS_JSON WHEN`` runs a real
:class:`~controller.worker.ControllerWorker` whose relay dies ``before`` publishing the
first event (the batch is closed and its outbox row committed, nothing is on the topic) or
``after`` it (the event is on the topic, the row not yet marked published).
"""

from __future__ import annotations

import json
import os
import signal
import sys
import time
from typing import Any
from unittest.mock import patch

from controller.events.relay import EventRelay
from controller.worker import ControllerWorker
from shared.settings import Settings
from shared.storage import open_storage

_publish = EventRelay._publish


def main() -> None:
    values = json.loads(sys.argv[1])
    when = sys.argv[2]
    settings = Settings(_env_file=None, **values)  # type: ignore[call-arg]

    def publish_and_die(relay: EventRelay, *args: Any) -> None:
        if when == "after":
            _publish(relay, *args)
        os.kill(os.getpid(), signal.SIGKILL)

    with patch.object(EventRelay, "_publish", publish_and_die):
        worker = ControllerWorker(settings, open_storage(settings))
        worker.start()
        time.sleep(60)  # killed long before


if __name__ == "__main__":
    main()

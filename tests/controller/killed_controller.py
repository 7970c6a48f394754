"""A controller process that SIGKILLs itself right after its first chunk commits.

``python -m tests.controller.killed_controller SETTINGS_JSON`` runs a real
:class:`~controller.worker.ControllerWorker`, with ``apply_rows`` wrapped: the first time a
chunk is applied, the process kills itself before returning to the listener, i.e. after the
database commit and before the message delete — the window the exactly-once rule is about.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import time
from typing import Any
from unittest.mock import patch

from pydantic import SecretStr

from controller.reducer import apply_rows
from controller.worker import ControllerWorker
from shared.listener_settings import listener_config
from shared.settings import Settings
from shared.storage import open_storage


def settings_to_json(settings: Settings) -> str:
    """The settings with their secrets revealed, for a child process."""
    values = {
        name: value.get_secret_value() if isinstance(value, SecretStr) else value
        for name, value in settings.model_dump().items()
    }
    values["api_keys"] = [key.get_secret_value() for key in settings.api_keys]
    return json.dumps(values, default=str)


def main() -> None:
    values = json.loads(sys.argv[1])
    settings = Settings(_env_file=None, **values)  # type: ignore[call-arg]

    def apply_then_die(*args: Any, **kwargs: Any) -> bool:
        applied = apply_rows(*args, **kwargs)
        if applied:
            os.kill(os.getpid(), signal.SIGKILL)  # committed; the message is not deleted
        return applied

    # One message at a time, so exactly one chunk is committed when the process dies (with
    # parallel handlers a second commit could land in the same instant).
    config = listener_config(settings, handler_parallelism=1, scaling_rule="0:1", max_threads=1)
    with patch("controller.results.apply_rows", apply_then_die):
        worker = ControllerWorker(settings, open_storage(settings), listener_config=config)
        worker.start()
        time.sleep(60)  # killed long before


if __name__ == "__main__":
    main()

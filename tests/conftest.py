"""Fixtures shared by the whole suite, as plugins.

Under pytest-xdist (``scripts/test.sh`` runs the suite on two workers) each worker starts
with ``COLUMNS=80`` and ``LINES=24`` that nobody asked for; the terminal tests pass the
environment on to the commands they run in a pseudo-terminal of a chosen size, and Rich
would take ``COLUMNS`` over that size. So they are dropped from a worker's environment.
"""

import os

if os.environ.get("PYTEST_XDIST_WORKER"):
    for name in ("COLUMNS", "LINES"):
        os.environ.pop(name, None)

pytest_plugins = [
    "tests.support.azurite",
    "tests.support.azcopy",
    "tests.support.servicebus_fixtures",
]

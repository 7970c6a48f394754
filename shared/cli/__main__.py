"""``python -m shared.cli``: the ``billing`` command without its console script."""

from shared.cli.app import main

main()

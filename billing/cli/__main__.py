"""``python -m billing.cli``: the ``billing`` command without its console script."""

from billing.cli.app import main

main()

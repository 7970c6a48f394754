"""``python -m bench [NAME ...] [--quick] [--list]``: see :mod:`bench.run`."""

from bench.run import main

raise SystemExit(main())

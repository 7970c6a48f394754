"""Benchmarks: ratios measured side by side in one run, never timed tests.

=====================  ==================================================================
``intake``             intake throughput next to a plain ``csv`` parse; peak RSS
``scaling``            drain rate by dequeue threads: the ``BILLING_SCALING_RULE`` defaults
``idle``               storage requests per idle hour per processor instance
``trigger_latency``    batch accepted → first work item dequeued, trigger vs polling
``end_to_end``         POST → warehouse vs the bare one-process loop; hot-path requests
``rating``             the integer rater vs the Decimal reference rater
``charge_load``        the plain ORM insert vs the bulk loader, SQLite and PostgreSQL
``stream``             a stream of batches against one batch of the same size
``celery_reference``   this project vs a plain Celery setup on the same Azurite
``soak``               descriptors, threads and RSS of every role over thousands of batches
=====================  ==================================================================

Run them with ``python -m bench [NAME] [--quick]`` or ``billing bench [NAME] [--quick]``
from a clone of the repository (the installed package does not ship this folder). The
helpers: :mod:`bench.report` (output), :mod:`bench.deployment` (a throw-away deployment fed
by the production intake), :mod:`bench.drain` (the listener + rating step in processes),
:mod:`bench.bare_pipeline`, :mod:`bench.hot_path`, :mod:`bench.timed_storage`.
"""

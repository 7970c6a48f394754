"""Fault injection, a test tool: storage and bus requests that fail as ``BILLING_FAULTS`` says.

Off unless ``BILLING_FAULTS`` is set (see :mod:`shared.faults.spec` for its keys); every
injector logs a warning when it is opened, so a process under faults says so loudly.
:func:`shared.storage.open_storage` and :func:`shared.bus.open_bus` apply it
(:mod:`.apply`), so every role process of a deployment started with the variable runs under
the plan:

* Azure storage: at the bottom of each SDK client's pipeline (:mod:`.transport`), below
  the SDK's own retries;
* embedded storage: at the ports, acting out the SDK's retries (:mod:`.storage`,
  :mod:`.retrying`), so both backends behave the same;
* the trigger bus, either backend: at the port (:mod:`.bus`).

Which operations are safe to retry blindly and which need a read-back is
:mod:`shared.storage.retries`.
"""

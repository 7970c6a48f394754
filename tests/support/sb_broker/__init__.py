"""The parts of the Service Bus test broker (the front is ``tests/support/servicebus_broker.py``).

One job each: ``addresses`` (what a link address names), ``entities`` (topics,
subscriptions, locks; no AMQP), ``codec`` (message sections, batches), ``message_format``
(reading a transfer's message-format), ``incoming`` (what clients send), ``requests``
(``$cbs`` and ``$management``), ``peek_lock`` (deliveries and settlements), ``conditions``
(errors sent) and ``handler`` (the proton event handler tying them to the wire).
"""

"""What the initiator and the controller both need of the batch events: the callback rule."""

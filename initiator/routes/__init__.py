"""The initiator's HTTP routes, one module per resource."""

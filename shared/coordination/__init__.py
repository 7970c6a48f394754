"""Coordination between instances through blobs: the order-id allocator and the release gate."""

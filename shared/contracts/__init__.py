"""What the roles exchange and read in common: queue and trigger messages, the chunk payload
and result blobs, the batch record and its statuses."""

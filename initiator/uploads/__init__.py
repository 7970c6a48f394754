"""Uploads straight to storage (the valet-key pattern): ``POST /uploads`` hands out a
short-lived, write-only grant for one blob of the ``incoming`` container; the sender
uploads the batch file there with any tool, then ``POST /batches`` with ``{"upload": blob}``
takes it through the same intake as a request body (docs/uploads.md).

* :mod:`.signers`: the grant's URL: a user delegation SAS (Azure), an account-key SAS
  (Azurite), or a signed route of the initiator (embedded backend, :mod:`.local_route`);
* :mod:`.ledger`: each upload's name is single-use: issued, then taken by one batch;
* :mod:`.intake`: ``{"upload": blob}`` → the blob's bytes through the batch intake;
* :mod:`.sweep`: uploads no batch took are removed after a while.
"""

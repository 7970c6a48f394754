"""The embedded storage backend: Azure Storage's semantics in one local folder, no server.

SQLite (WAL) holds queues, tables and blob metadata; blob bytes live in files. Several
processes may use one folder at once. See :mod:`shared.storage.embedded.account` for the
layout and each module for the Azure behaviour it reproduces.
"""

from shared.storage.embedded.account import EmbeddedStorageAccount

__all__ = ["EmbeddedStorageAccount"]

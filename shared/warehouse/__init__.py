"""The SQL warehouse: models, the engine factory and the Alembic migrations."""

from shared.warehouse.engine import make_engine
from shared.warehouse.migrate import upgrade
from shared.warehouse.models import AppliedChunk, Base, Batch, Charge, Invoice

__all__ = ["AppliedChunk", "Base", "Batch", "Charge", "Invoice", "make_engine", "upgrade"]

"""The SQL warehouse: models, the engine factory and the Alembic migrations (design §6)."""

from controller.warehouse.engine import make_engine
from controller.warehouse.migrate import upgrade
from controller.warehouse.models import AppliedChunk, Base, Batch, Charge, Invoice

__all__ = ["AppliedChunk", "Base", "Batch", "Charge", "Invoice", "make_engine", "upgrade"]

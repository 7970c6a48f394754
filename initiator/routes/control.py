"""``POST /control/release`` and ``POST /control/hold``: the release gate over HTTP.

The same as ``billing release`` / ``billing hold``: the durable flag first, then the
broadcast on the trigger topic (see :mod:`shared.coordination.gate`). ``GET /control/gate`` reads
the
flag. Every route needs an API key: opening the gate starts the whole processing fleet.
"""

from __future__ import annotations

from fastapi import APIRouter, Depends
from pydantic import BaseModel

from initiator.auth import require_api_key
from initiator.dependencies import Services, get_services
from shared.coordination.gate import read_gate, set_gate
from shared.storage.ports import BlobContainer

router = APIRouter(prefix="/control", tags=["control"], dependencies=[Depends(require_api_key)])


class GateView(BaseModel):
    """The release gate: ``released`` processors take work, held ones wait."""

    released: bool


@router.post(
    "/release", operation_id="releaseGate", summary="Release the gate", response_model=GateView
)
def release(services: Services = Depends(get_services)) -> GateView:
    """Open the release gate: the durable flag, then a broadcast that wakes every processor."""
    return _flip(services, released=True)


@router.post("/hold", operation_id="holdGate", summary="Hold the gate", response_model=GateView)
def hold(services: Services = Depends(get_services)) -> GateView:
    """Close the release gate: processors finish what they hold and take no new work."""
    return _flip(services, released=False)


@router.get(
    "/gate", operation_id="getGate", summary="Get the gate's state", response_model=GateView
)
def gate(services: Services = Depends(get_services)) -> GateView:
    """Whether the release gate is released (processors take work) or held (they wait)."""
    return GateView(released=read_gate(_control(services)))


def _flip(services: Services, *, released: bool) -> GateView:
    set_gate(_control(services), services.bus, released=released)
    return GateView(released=released)


def _control(services: Services) -> BlobContainer:
    return services.storage.container(services.settings.control_container)

"""``GET /pricebook``: the pricebook new batches are pinned to now."""

from __future__ import annotations

from fastapi import APIRouter, Depends

from initiator.auth import require_api_key
from initiator.dependencies import Services, get_services
from initiator.schemas import PricebookView

router = APIRouter(tags=["pricebook"], dependencies=[Depends(require_api_key)])


@router.get(
    "/pricebook",
    operation_id="getPricebook",
    summary="Get the current pricebook",
    response_model=PricebookView,
)
def current_pricebook(services: Services = Depends(get_services)) -> PricebookView:
    """The pricebook new batches are pinned to (its version and canonical content); a batch
    is rated with the one current when it was accepted."""
    version, pricebook = services.pricebooks.current()
    return PricebookView(version=version, pricebook=pricebook.canonical())

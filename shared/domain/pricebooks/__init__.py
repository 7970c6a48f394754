"""Pricebook documents shipped with the project (data only; loaded by
``shared.domain.pricebook``)."""

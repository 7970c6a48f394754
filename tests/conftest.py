"""Fixtures shared by the whole suite, as plugins."""

pytest_plugins = [
    "tests.support.azurite",
    "tests.support.azcopy",
    "tests.support.servicebus_fixtures",
]

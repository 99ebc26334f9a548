"""Every entropy test runs on the C kernel and again on the Python reference."""

import pytest


@pytest.fixture(autouse=True)
def _both_backends(backend):
    """Pull in the shared ``backend`` fixture (tests/conftest.py) for every test here."""
    yield backend

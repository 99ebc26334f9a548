"""Shared fixtures: every kernel test runs once per backend (python-zstandard's make_cffi pattern)."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest
from hypothesis import settings

from imij_plugins import _backend

# No test fails on time: on a shared 2-core CI machine any example can stall past hypothesis's
# default 200 ms deadline, which would fail a run at random (tests that set deadline=None already).
settings.register_profile("imij", deadline=None)
settings.load_profile("imij")


@pytest.fixture(params=["c", "python"])
def backend(request: pytest.FixtureRequest) -> Iterator[str]:
    """Run the test on the C kernels and again on the Python references."""
    name = request.param
    if name not in _backend.available():
        if os.environ.get("IMIJ_REQUIRE_C") == "1":
            pytest.fail("the C kernels were not built (IMIJ_REQUIRE_C=1)")
        pytest.skip("C kernels not built")
    with _backend.use(name):
        yield name


def pytest_sessionstart(session: pytest.Session) -> None:
    """Under CI (IMIJ_REQUIRE_C=1) a silent fallback to the Python backend fails the run."""
    if os.environ.get("IMIJ_REQUIRE_C") == "1" and _backend.lib is None:
        raise pytest.UsageError("IMIJ_REQUIRE_C=1 but the C kernels were not built")

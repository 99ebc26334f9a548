"""The one Python table of the C kernels' status codes is built from the C constants: every
``IMIJ_E_*`` constant cffi's ``lib`` exposes has exactly one entry, the codes are distinct and
negative, and csrc's ``imij_strerror`` gives each its own text, which the errors carry."""

from __future__ import annotations

import pytest

from imij_plugins import _backend
from imij_plugins.errors import Corrupt
from imij_plugins.payload.kernel_codes import KERNEL_CODES

pytestmark = pytest.mark.skipif(_backend.lib is None, reason="C kernels not built")

# what callers pass as ``refused``: the decoders RuntimeError, the encoders ValueError
REFUSED = (RuntimeError, ValueError)


def _constants() -> dict[str, int]:
    lib = _backend.lib
    return {name: getattr(lib, name) for name in dir(lib) if name.startswith("IMIJ_E_")}


def _strerror(code: int) -> str:
    return _backend.ffi.string(_backend.lib.imij_strerror(code)).decode()


def test_every_constant_has_one_entry():
    constants = _constants()
    assert set(KERNEL_CODES.classes) == set(constants)
    assert len(set(constants.values())) == len(constants)  # distinct codes
    assert all(code < 0 for code in constants.values()) and _backend.lib.IMIJ_OK == 0
    assert set(KERNEL_CODES.by_code) == set(constants.values())


def test_no_status_family_is_left():
    """One enum: no constant of the old per-kernel families (IMIJ_ENT_E_SIZE and the like)."""
    assert [name for name in dir(_backend.lib) if "_E_" in name and not name.startswith("IMIJ_E_")] == []


def test_every_code_has_its_own_text():
    texts = {code: _strerror(code) for code in [_backend.lib.IMIJ_OK, *_constants().values()]}
    assert all(texts.values()) and "unknown status" not in texts.values()
    assert len(set(texts.values())) == len(texts)  # distinct
    assert _strerror(-1000) == _strerror(1) == "unknown status"


@pytest.mark.parametrize("refused", REFUSED)
def test_errors_carry_the_class_and_text(refused: type[Exception]):
    for name, code in _constants().items():
        error = KERNEL_CODES.error(code, kernel="kernel", refused=refused)
        assert type(error) is (KERNEL_CODES.classes[name] or refused), name
        assert str(error) == f"kernel: {_strerror(code)}"
    error = KERNEL_CODES.error(-1000, kernel="kernel", refused=ValueError)  # a code C does not define
    assert type(error) is RuntimeError and str(error) == "kernel: unknown status -1000"


def test_refused_calls_are_not_blamed_on_the_input():
    """E_ARGS, E_SIZE, E_SPACE and E_LAYOUT are bugs or choices on the Python side: never Corrupt."""
    for name in ("IMIJ_E_ARGS", "IMIJ_E_SIZE", "IMIJ_E_SPACE", "IMIJ_E_LAYOUT"):
        for refused in REFUSED:
            code = getattr(_backend.lib, name)
            assert not isinstance(KERNEL_CODES.error(code, kernel="k", refused=refused), Corrupt), name

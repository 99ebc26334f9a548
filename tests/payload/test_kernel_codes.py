"""The Python tables of the C kernels' return codes are built from the C constants: every
``IMIJ_<family>_E_*`` constant cffi's ``lib`` exposes has exactly one entry, the codes of a
family are distinct and negative, and no family of codes goes without its table."""

from __future__ import annotations

import pytest

from imij_plugins import _backend
from imij_plugins.errors import Corrupt
from imij_plugins.payload.entropy.bilevel import LEVEL_CODES
from imij_plugins.payload.entropy.kernel import ENTROPY_CODES
from imij_plugins.payload.entropy.models import TABLE_CODES
from imij_plugins.payload.kernel_codes import ENCODER, KernelCodes
from imij_plugins.payload.quick.packets import QUICK_CODES

pytestmark = pytest.mark.skipif(_backend.lib is None, reason="C kernels not built")

TABLES = (QUICK_CODES, ENTROPY_CODES, LEVEL_CODES, TABLE_CODES, ENCODER)


def _constants(prefix: str) -> dict[str, int]:
    lib = _backend.lib
    return {name[len(prefix):]: getattr(lib, name) for name in dir(lib) if name.startswith(prefix + "E_")}


@pytest.mark.parametrize("table", TABLES, ids=lambda t: t.prefix)
def test_every_constant_has_one_entry(table: KernelCodes):
    constants = _constants(table.prefix)
    assert set(table.entries) == set(constants)
    assert len(set(constants.values())) == len(constants)  # distinct codes
    assert all(code < 0 for code in constants.values()) and getattr(_backend.lib, table.prefix + "OK") == 0
    assert table.by_code == {constants[name]: entry for name, entry in table.entries.items()}


def test_every_family_has_a_table():
    lib = _backend.lib
    families = {name[: name.index("_E_") + 1] for name in dir(lib) if name.startswith("IMIJ_") and "_E_" in name}
    assert families == {t.prefix for t in TABLES}


@pytest.mark.parametrize("table", TABLES, ids=lambda t: t.prefix)
def test_errors_carry_the_class_and_message(table: KernelCodes):
    for name, (cls, message) in table.entries.items():
        error = table.error(table.code(name), "kernel")
        assert type(error) is cls and str(error) == f"kernel: {message}"
    assert type(table.error(-1000)) is RuntimeError  # a code C does not define


def test_refused_calls_are_not_blamed_on_the_input():
    """E_ARGS and the size codes are bugs on the Python side: never Corrupt."""
    for table in TABLES:
        for name, (cls, _) in table.entries.items():
            if name in ("E_ARGS", "E_SIZE"):
                assert not issubclass(cls, Corrupt), (table.prefix, name)

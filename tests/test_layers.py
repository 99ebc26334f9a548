"""The package's import layers (docs/ARCHITECTURE.md): each module imports only modules of its
own layer or a lower one. Checked on the source (AST), so an import inside a function counts as
well; imports under ``if TYPE_CHECKING:`` serve annotations only and do not."""

from __future__ import annotations

import ast
from pathlib import Path

import imij_plugins

PACKAGE = Path(imij_plugins.__file__).parent

# Lowest first; a module belongs to the layer of its longest listed prefix (names relative to
# the package; "" is the package itself, its public names being the user-level API's).
LAYERS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("base", ("errors", "signature", "_platform", "_backend", "_build", "_kernels", "_version")),
    ("wire", ("wire",)),
    ("registry", ("registry",)),
    ("pixels", ("pixels",)),
    ("container", ("container",)),
    ("payload", ("payload",)),
    ("encoders", ("payload.quick.writer", *(f"payload.entropy.{name}" for name in (
        "scratch", "residuals", "context_stats", "estimate", "search", "palettes", "streams", "mapchoice", "modeling",
        "unit_tuples", "template_tables", "shared_entries", "level_writer", "encoder")))),
    ("api", ("", "options", "reader", "remote", "writer", "api", "physical", "lazy")),
    ("imijset", ("imijset",)),
    ("adapters", ("pillow", "imageio", "xarray", "napari", "convert", "codecs", "dask", "cli", "__main__",
                  "imijset.cli", "samples", "desktop")),
)

# (importer, imported) pairs that go up a layer, each with the reason it is allowed.
EXCEPTIONS: dict[tuple[str, str], str] = {}


def layer_of(name: str) -> int:
    """The index in LAYERS of the module ``name`` (relative to the package)."""
    best, rank = -1, -1
    for index, (_, prefixes) in enumerate(LAYERS):
        for prefix in prefixes:
            if (name == prefix or prefix and name.startswith(prefix + ".")) and len(prefix) > best:
                best, rank = len(prefix), index
    return rank


def _modules() -> dict[str, Path]:
    """Every module of the package by its name relative to the package."""
    out = {}
    for path in PACKAGE.rglob("*.py"):
        parts = list(path.relative_to(PACKAGE).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


MODULES = _modules()


def _runtime_nodes(tree: ast.AST):
    """Every node outside ``if TYPE_CHECKING:`` blocks."""
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            yield from (n for child in node.orelse for n in [child, *_runtime_nodes(child)])
            continue
        yield node
        yield from _runtime_nodes(node)


def imports(name: str) -> set[str]:
    """The package modules (relative names; "" for the package itself) module ``name`` imports."""
    path = MODULES[name]
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    for node in _runtime_nodes(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:  # relative: up from the importer's package
                parts = ["imij_plugins", *filter(None, package.split("."))]
                base = ".".join(parts[: len(parts) - node.level + 1]) + ("." + node.module if node.module else "")
            else:
                base = node.module or ""
            targets = [f"{base}.{alias.name}" for alias in node.names]
            targets = [t if t.removeprefix("imij_plugins.") in MODULES else base for t in targets]
        else:
            continue
        for target in targets:
            if target == "imij_plugins" or target.startswith("imij_plugins."):
                found.add(target.removeprefix("imij_plugins").removeprefix("."))
    found.discard(name)
    return found


def upward() -> dict[tuple[str, str], tuple[str, str]]:
    """Every import of a higher layer: (importer, imported) -> their layer names."""
    out = {}
    for name in MODULES:
        for target in imports(name):
            if layer_of(target) > layer_of(name):
                out[(name, target)] = (LAYERS[layer_of(name)][0], LAYERS[layer_of(target)][0])
    return out


def test_every_module_has_a_layer():
    assert [name for name in MODULES if layer_of(name) < 0] == []


def test_the_checker_sees_imports():
    """The parse finds relative, lazy and ``from package import module`` imports."""
    assert "payload.head" in imports("payload.data")
    assert "payload.entropy.encoder" in imports("writer")  # inside a function
    assert "payload.entropy.decoder" in imports("payload.data")
    assert "imageio" not in imports("")  # only under TYPE_CHECKING in __init__.py
    assert layer_of("imijset.cli") == layer_of("cli") > layer_of("imijset") > layer_of("") > layer_of("payload")
    assert layer_of("payload.entropy.encoder") > layer_of("payload.entropy.decoder") > layer_of("container.header")


def test_imports_go_down_the_layers():
    found = {pair: layers for pair, layers in upward().items() if pair not in EXCEPTIONS}
    assert found == {}, "import of a higher layer (docs/ARCHITECTURE.md), or list it in EXCEPTIONS with a reason"


def test_exceptions_still_occur():
    assert [pair for pair in EXCEPTIONS if pair not in upward()] == [], "no longer upward: drop from EXCEPTIONS"


# Packages that may import Pillow (the autoload hook, _imij_pillow_autoload, is outside the
# package): its adapter, the converter's Pillow reader and PNG writer, the desktop thumbnailer,
# and the CLI's demo, which compares with PNG. The core reads Exif resolution itself.
PILLOW_USERS = ("pillow", "convert", "desktop", "cli")
ADAPTERS = len(LAYERS) - 1


def _import_nodes(name: str) -> list[ast.Import | ast.ImportFrom]:
    tree = ast.parse(MODULES[name].read_text(encoding="utf-8"))
    return [n for n in _runtime_nodes(tree) if isinstance(n, (ast.Import, ast.ImportFrom))]


def _imports_pillow(name: str) -> bool:
    for node in _import_nodes(name):
        modules = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]
        if any(m == "PIL" or m.startswith("PIL.") for m in modules if not getattr(node, "level", 0)):
            return True
    return False


def test_only_the_pillow_users_import_pillow():
    assert _imports_pillow("pillow.ImiImagePlugin")  # the check sees an import
    found = [n for n in MODULES if _imports_pillow(n) and n.split(".")[0] not in PILLOW_USERS]
    assert found == [], "the core and the other adapters do not import PIL"


def test_adapters_import_no_private_name_of_another_package():
    """An adapter uses the public names of the core and of other adapters (a private helper it
    needs is made public where it lives, e.g. ``pillow.images`` for the converter)."""
    found = []
    for name in (n for n in MODULES if layer_of(n) == ADAPTERS):
        for node in _import_nodes(name):
            if not isinstance(node, ast.ImportFrom) or node.level or not (node.module or "").startswith("imij_plugins"):
                continue
            module = node.module.removeprefix("imij_plugins").removeprefix(".")  # type: ignore[union-attr]
            if module.split(".")[0] != name.split(".")[0]:
                found += [f"{name}: {module}.{a.name}" for a in node.names if a.name.startswith("_")]
    assert found == []

"""``imij pillow-autoload``: a .pth start-up hook that registers IMI when a program imports PIL.Image.

The hook is tested where Python really runs it, at start-up: in a throwaway venv (made in
milliseconds, without pip) that sees this environment's packages through one .pth file, but not
this environment's own autoload hook, so that the results do not depend on whether a developer
enabled it here. What it costs ``import PIL.Image`` is asserted as the modules it imports (no
numpy, cffi or codec module), not as a time.
"""

from __future__ import annotations

import dataclasses
import hashlib
import importlib.util
import json
import os
import re
import shutil
import site
import subprocess
import sys
import sysconfig
import textwrap
import venv
from pathlib import Path

import numpy as np
import pytest

import _imij_pillow_autoload as hook
import imij_plugins
from imij_plugins.cli import HOOK_MODULE, PTH_NAME, main

from .startup import pil_image_own_modules

HOOK_DIR = os.path.dirname(hook.__file__)


@dataclasses.dataclass
class Env:
    """A throwaway Python: its interpreter, its site-packages (where the CLI writes by default), its environment."""

    python: str
    site_dir: Path
    environ: dict[str, str] | None = None  # None: this process's environment

    def run(self, *args: str, cwd: Path, check: bool = True) -> subprocess.CompletedProcess[str]:
        """Run this venv's Python with ``args``; with ``check``, fail the test on a non-zero exit."""
        result = subprocess.run([self.python, *args], cwd=cwd, capture_output=True, text=True, timeout=120, env=self.environ)
        if check:
            assert result.returncode == 0, result.stderr
        return result

    def autoload(self, action: str, cwd: Path) -> str:
        """``imij pillow-autoload ACTION`` as this venv's Python runs it; its stdout."""
        return self.run("-m", "imij_plugins.cli", "pillow-autoload", action, cwd=cwd).stdout


def _make_venv(root: Path, parent_sites: list[str]) -> Env:
    """A venv without pip whose start-up also processes ``parent_sites`` (except their autoload hook)."""
    venv.create(root, with_pip=False, symlinks=os.name != "nt")
    python = str(root / ("Scripts/python.exe" if os.name == "nt" else "bin/python"))
    purelib = subprocess.run(
        [python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"], capture_output=True, text=True, check=True
    ).stdout.strip()
    _add_parent_sites(Path(purelib), parent_sites)
    return Env(python, Path(purelib))


def _add_parent_sites(site_dir: Path, parent_sites: list[str]) -> None:
    """Make ``site_dir``'s start-up process ``parent_sites`` too: the editable-install finder...: everything but our hook."""
    for parent in parent_sites:
        code = (
            f"P = {parent!r}\nif P not in sys.path:\n sys.path.append(P)\n import os, site\n"
            f" for n in sorted(os.listdir(P)):\n  if n.endswith('.pth') and n != {PTH_NAME!r}:\n   site.addpackage(P, n, None)\n"
        )
        with open(site_dir / "_parent_site.pth", "a", encoding="ascii") as f:  # sorts before ours
            f.write(f"import sys; exec({ascii(code)})\n")


@pytest.fixture
def env(tmp_path: Path) -> Env:
    """A throwaway venv that imports imij_plugins and Pillow from this environment."""
    return _make_venv(tmp_path / "venv", [p for p in site.getsitepackages() if os.path.isdir(p)])


@pytest.fixture
def image(tmp_path: Path) -> Path:
    """A 64x48 RGB .imi file."""
    path = tmp_path / "x.imi"
    imij_plugins.write(path, (np.arange(48 * 64 * 3) % 251).astype(np.uint8).reshape(48, 64, 3))
    return path


# --- the CLI, in process, against a temporary directory ---------------------------------------------


def test_enable_writes_one_import_line_and_is_idempotent(tmp_path, capsys):
    pth = tmp_path / PTH_NAME
    assert main(["pillow-autoload", "enable", "--site-dir", str(tmp_path)]) == 0
    out, err = capsys.readouterr()
    assert out == f"Pillow autoload enabled: {pth}\n"
    assert "is not a site-packages directory of this Python" in err
    text = pth.read_text(encoding="ascii")
    assert text.count("\n") == 1 and text.startswith("import ")  # site.py executes lines that start so
    assert f"import {HOOK_MODULE}" in text and HOOK_DIR in text  # where to find it before site.py has finished
    assert main(["pillow-autoload", "enable", "--site-dir", str(tmp_path)]) == 0
    assert capsys.readouterr().out == f"Pillow autoload already enabled: {pth}\n"
    assert pth.read_text(encoding="ascii") == text
    assert sorted(p.name for p in tmp_path.iterdir()) == [PTH_NAME]  # no temporary file left behind


def test_status_and_disable(tmp_path, capsys):
    pth = tmp_path / PTH_NAME
    args = ["--site-dir", str(tmp_path)]
    assert main(["pillow-autoload", "status", *args]) == 0
    assert capsys.readouterr().out == f"Pillow autoload: disabled (no {pth})\n"
    main(["pillow-autoload", "enable", *args])
    capsys.readouterr()
    assert main(["pillow-autoload", "status", *args]) == 0
    assert capsys.readouterr().out == f"Pillow autoload: enabled ({pth})\n"
    assert main(["pillow-autoload", "disable", *args]) == 0
    assert capsys.readouterr().out == f"Pillow autoload disabled: removed {pth}\n"
    assert not pth.exists()
    assert main(["pillow-autoload", "disable", *args]) == 0
    assert capsys.readouterr().out == f"Pillow autoload already disabled: no {pth}\n"


def test_a_hook_from_another_version_is_reported_and_rewritten(tmp_path, capsys):
    pth = tmp_path / PTH_NAME
    pth.write_text("import some_older_hook\n")
    main(["pillow-autoload", "status", "--site-dir", str(tmp_path)])
    assert "enabled by another version of imij-plugins" in capsys.readouterr().out
    assert main(["pillow-autoload", "enable", "--site-dir", str(tmp_path)]) == 0
    assert capsys.readouterr().out == f"Pillow autoload updated: {pth}\n"
    assert f"import {HOOK_MODULE}" in pth.read_text()


def test_enable_into_a_missing_directory_fails_clearly(tmp_path, capsys):
    missing = tmp_path / "missing"
    assert main(["pillow-autoload", "enable", "--site-dir", str(missing)]) == 1
    err = capsys.readouterr().err
    assert f"imij pillow-autoload enable: cannot change {missing / PTH_NAME}: No such file or directory" in err


@pytest.fixture
def user_site(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """This process's user site-packages moved to a temporary directory that does not exist yet."""
    directory = tmp_path / "home" / "site-packages"
    monkeypatch.setattr(site, "USER_SITE", str(directory))
    monkeypatch.setattr(site, "ENABLE_USER_SITE", True)
    return directory


def test_enable_user_writes_the_user_site_creating_it(user_site, capsys):
    assert main(["pillow-autoload", "enable", "--user"]) == 0
    assert capsys.readouterr().out == f"Pillow autoload enabled: {user_site / PTH_NAME}\n"
    assert f"import {HOOK_MODULE}" in (user_site / PTH_NAME).read_text(encoding="ascii")
    assert main(["pillow-autoload", "disable", "--user"]) == 0
    assert not (user_site / PTH_NAME).exists()


def test_enable_without_permission_says_where_and_how(user_site, tmp_path, monkeypatch, capsys):
    def refuse(*args: object) -> None:
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(os, "replace", refuse)  # as a root-owned site-packages refuses a user (tests may run as root)
    assert main(["pillow-autoload", "enable", "--site-dir", str(tmp_path)]) == 1
    err = capsys.readouterr().err.splitlines()
    assert err[1:] == [
        f"imij pillow-autoload enable: cannot change {tmp_path / PTH_NAME}: Permission denied",
        f"  for your user only: imij pillow-autoload enable --user (writes {user_site / PTH_NAME})",
        "  for everyone using this Python: run 'imij pillow-autoload enable' as an administrator",
    ]
    assert list(tmp_path.iterdir()) == []  # no .pth, no temporary file


def test_enable_writes_the_hook_bytecode(tmp_path):
    """Start-up loads the hook's .pyc rather than compiling it, even when bytecode writing is off."""
    cached = Path(importlib.util.cache_from_source(importlib.util.find_spec(HOOK_MODULE).origin))
    if not os.access(cached.parent if cached.parent.exists() else cached.parent.parent, os.W_OK):
        pytest.skip(f"{cached.parent} is read-only")
    cached.unlink(missing_ok=True)
    main(["pillow-autoload", "enable", "--site-dir", str(tmp_path)])
    assert cached.exists()


@pytest.mark.parametrize("args", [["pillow-autoload", "--help"], ["--help"]])
def test_help_names_the_subcommand(args, capsys):
    with pytest.raises(SystemExit) as exc:
        main(args)
    assert exc.value.code == 0
    assert "pillow-autoload" in capsys.readouterr().out


# --- the hook at interpreter start-up, in a throwaway venv --------------------------------------------

PLAIN_PILLOW_PROGRAM = """
    import hashlib, json, sys
    loaded_at_start = sorted(m for m in sys.modules if m.split(".")[0] in ("imij_plugins", "PIL", "numpy", "{hook}"))
    from PIL import Image
    with Image.open({src!r}) as im:
        opened = [im.format, list(im.size)]
        im.thumbnail((16, 16))
        im.save({dst!r})
        digest = hashlib.sha256(im.tobytes()).hexdigest()
    with Image.open({dst!r}) as back:
        saved = [back.format, list(back.size)]
    print(json.dumps([loaded_at_start, opened, saved, digest, "imij_plugins" in sys.modules]))
"""


def test_plain_pillow_program_opens_thumbnails_and_saves_imi(env, image, tmp_path):
    dst = tmp_path / "thumb.imi"
    assert env.autoload("enable", tmp_path) == f"Pillow autoload enabled: {env.site_dir / PTH_NAME}\n"  # the venv's own
    assert env.autoload("status", tmp_path) == f"Pillow autoload: enabled ({env.site_dir / PTH_NAME})\n"
    program = textwrap.dedent(PLAIN_PILLOW_PROGRAM.format(hook=HOOK_MODULE, src=str(image), dst=str(dst)))
    result = env.run("-c", program, cwd=tmp_path)
    assert result.stderr == ""
    loaded_at_start, opened, saved, digest, imported_later = json.loads(result.stdout)
    assert loaded_at_start == [HOOK_MODULE]  # no imij_plugins, PIL or numpy before PIL.Image is imported
    assert opened == ["IMI", [64, 48]] and saved == ["IMI", [16, 12]] and imported_later
    assert hashlib.sha256(imij_plugins.read(dst).tobytes()).hexdigest() == digest  # saved losslessly

    assert env.autoload("disable", tmp_path) == f"Pillow autoload disabled: removed {env.site_dir / PTH_NAME}\n"
    result = env.run("-c", program, cwd=tmp_path, check=False)
    assert result.returncode != 0 and "UnidentifiedImageError" in result.stderr  # the hook did the work


# What the hook adds to ``import PIL.Image``: the registration stand-ins, no numpy, cffi or codec module.
IMPORTED_WITH_PIL_IMAGE = {
    "imij_plugins",
    "imij_plugins._version",
    "imij_plugins.pillow",
    "imij_plugins.pillow.registration",
    "imij_plugins.signature",
}


def _imij_imports(importtime: str) -> set[str]:
    """The modules of imij-plugins (package and hook) that ``python -X importtime`` reports in ``importtime``."""
    names = (line.rpartition("|")[2].strip() for line in importtime.splitlines() if line.startswith("import time:"))
    return {name for name in names if name.split(".")[0] in ("imij_plugins", HOOK_MODULE)}


def test_import_pil_image_loads_five_small_modules_and_the_codec_on_first_open(env, image, tmp_path):
    env.autoload("enable", tmp_path)
    code = textwrap.dedent(
        f"""
        import sys
        print("-- import PIL.Image", file=sys.stderr)
        import PIL.Image
        print(" ".join(sorted(sys.modules)))
        print("-- first open", file=sys.stderr)
        with PIL.Image.open({str(image)!r}) as im:
            im.load()
            print(im.format, im.size, type(im).__name__)
        """
    )
    result = env.run("-X", "importtime", "-c", code, cwd=tmp_path)
    at_start, at_pil_image, at_open = re.split(r"^-- .*$", result.stderr, flags=re.M)
    assert _imij_imports(at_start) == {HOOK_MODULE}
    assert _imij_imports(at_pil_image) == IMPORTED_WITH_PIL_IMAGE
    loaded, opened = result.stdout.splitlines()
    assert not {"numpy", "cffi", "_cffi_backend"} & (set(loaded.split()) - pil_image_own_modules())
    assert opened == "IMI (64, 48) ImiImageFile"
    assert {"imij_plugins.api", "imij_plugins.pillow.ImiImagePlugin"} <= _imij_imports(at_open)  # the codec, on first use


def test_importing_imij_plugins_first_registers_once_and_quietly(env, tmp_path):
    env.autoload("enable", tmp_path)
    result = env.run("-c", "import imij_plugins; from PIL import Image; print(Image.ID.count('IMI'))", cwd=tmp_path)
    assert (result.stdout, result.stderr) == ("1\n", "")


def test_pil_image_imported_before_the_hook_registers_at_once(env, tmp_path):
    """No finder is left behind once Pillow and imageio (which the package also waits for) are registered."""
    code = (
        f"import sys, PIL.Image; import {HOOK_MODULE} as hook; print('IMI' in PIL.Image.OPEN, hook.Finder in sys.meta_path); "
        "import imageio.config as c; print('IMI' in c.known_plugins, hook.Finder in sys.meta_path)"
    )
    assert env.run("-c", code, cwd=tmp_path).stdout == "True True\nTrue False\n"


def test_hook_imports_nothing_else_at_startup(env, tmp_path):
    listing = "import sys; print(' '.join(sorted(sys.modules)))"
    without = set(env.run("-c", listing, cwd=tmp_path).stdout.split())
    env.autoload("enable", tmp_path)
    assert set(env.run("-c", listing, cwd=tmp_path).stdout.split()) - without == {HOOK_MODULE}


def test_a_broken_imij_plugins_is_one_line_and_pillow_still_works(env, tmp_path):
    env.autoload("enable", tmp_path)
    fake = tmp_path / "imij_plugins"  # shadows the real package for a program run from tmp_path
    fake.mkdir()
    (fake / "__init__.py").write_text("raise RuntimeError('broken install')\n")
    code = "from PIL import Image; Image.new('L', (2, 2)).save('a.png'); print(Image.open('a.png').format)"
    result = env.run("-c", code, cwd=tmp_path)
    assert result.stdout == "PNG\n"
    assert result.stderr.splitlines() == [
        "imij-plugins: could not register IMI with Pillow (RuntimeError: broken install); Pillow works without it"
    ]


# --- pip uninstall, user and system-wide installs -------------------------------------------------------


def test_after_uninstall_python_starts_silently(tmp_path):
    """pip uninstall removes the hook module and the package but not the .pth: nothing runs, nothing is printed."""
    install = tmp_path / "install"  # imij-plugins as pip installs it: the hook module next to the package
    shutil.copytree(Path(imij_plugins.__file__).parent, install / "imij_plugins", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(hook.__file__, install)
    deps = tmp_path / "deps"  # this environment's packages but imij-plugins, which a plain install keeps there
    deps.mkdir()
    for parent in filter(os.path.isdir, site.getsitepackages()):
        for name in os.listdir(parent):
            if not name.startswith(("imij_plugins", "imij-plugins", "_imij", "__editable__")) and not name.endswith(".pth"):
                if not (deps / name).exists():
                    (deps / name).symlink_to(Path(parent, name))
    env = _make_venv(tmp_path / "venv", [])
    with open(env.site_dir / "_paths.pth", "w", encoding="ascii") as f:  # numpy, Pillow...: not imij-plugins itself
        f.writelines(f"{p}\n" for p in [str(install), str(deps)])
    assert env.autoload("enable", tmp_path) == f"Pillow autoload enabled: {env.site_dir / PTH_NAME}\n"
    program = "import PIL.Image; print('IMI' in PIL.Image.OPEN)"
    assert env.run("-c", program, cwd=tmp_path).stdout == "True\n"
    shutil.rmtree(install / "imij_plugins")  # the package gone, the hook module left
    result = env.run("-c", program, cwd=tmp_path)
    assert (result.stdout, result.stderr) == ("False\n", "")
    (install / f"{HOOK_MODULE}.py").unlink()  # both gone
    shutil.rmtree(install / "__pycache__")
    result = env.run("-c", program, cwd=tmp_path)
    assert (result.stdout, result.stderr) == ("False\n", "")
    assert env.run("-c", "pass", cwd=tmp_path).stderr == ""


def _base_python() -> str:
    """The interpreter this environment was made from (on Python 3.10 a venv's ``sys._base_executable``
    is the venv's own, whose pyvenv.cfg turns the user site off)."""
    base = Path(sys.base_prefix) / "bin" / f"python{sys.version_info.major}.{sys.version_info.minor}"
    return str(base) if base.is_file() else sys._base_executable


def _system_python(root: Path, user_base: Path) -> Env:
    """A Python that is no venv, so site.py runs the user site's .pth files before its own site-packages.

    Its prefix (PYTHONHOME) is ``root``: this Python's standard library, linked, and a site-packages
    of its own, which sees this environment's packages as a system-wide install would hold them.
    """
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    lib = root / "lib" / stdlib.name
    (lib / "site-packages").mkdir(parents=True)
    for entry in stdlib.iterdir():
        if entry.name != "site-packages":
            (lib / entry.name).symlink_to(entry)
    environ = {k: v for k, v in os.environ.items() if k not in ("PYTHONNOUSERSITE", "VIRTUAL_ENV", "PYTHONPATH")}
    system = Env(_base_python(), lib / "site-packages", {**environ, "PYTHONHOME": str(root), "PYTHONUSERBASE": str(user_base)})
    _add_parent_sites(system.site_dir, [p for p in site.getsitepackages() if os.path.isdir(p)])
    return system


@pytest.mark.skipif(os.name == "nt", reason="links a POSIX standard library")
def test_a_user_hook_with_a_system_wide_install_registers_once(image, tmp_path):
    """A per-user hook runs before site.py adds the system-wide site-packages, where imij-plugins is.

    A second hook, system-wide, changes nothing: IMI registers once.
    """
    system = _system_python(tmp_path / "system", tmp_path / "userbase")
    user_site = Path(system.run("-c", "import site; print(site.getusersitepackages())", cwd=tmp_path).stdout.strip())
    assert system.run("-m", "imij_plugins.cli", "pillow-autoload", "enable", "--user", cwd=tmp_path).stdout == (
        f"Pillow autoload enabled: {user_site / PTH_NAME}\n"
    )
    code = (
        f"import sys; finders = sys.meta_path.count(sys.modules[{HOOK_MODULE!r}].Finder); "
        f"from PIL import Image; im = Image.open({str(image)!r}); print(finders, Image.ID.count('IMI'), im.format, im.size)"
    )
    result = system.run("-c", code, cwd=tmp_path)
    assert (result.stdout, result.stderr) == ("1 1 IMI (64, 48)\n", "")
    assert system.run("-m", "imij_plugins.cli", "pillow-autoload", "enable", cwd=tmp_path).stdout == (
        f"Pillow autoload enabled: {system.site_dir / PTH_NAME}\n"
    )
    result = system.run("-c", code, cwd=tmp_path)
    assert (result.stdout, result.stderr) == ("1 1 IMI (64, 48)\n", "")


# --- multiprocessing "spawn": workers are new interpreters ---------------------------------------------

WORKER = '''
    """Worker functions: plain Pillow."""
    from PIL import Image


    def describe(path):
        with Image.open(path) as im:
            im.load()
            return im.format, im.size
'''

SPAWN_MAIN = """
    import json, multiprocessing, sys
    import worker

    if __name__ == "__main__":
        how, paths = sys.argv[1], sys.argv[2:]
        options = {}
        if how in ("initializer", "parent-only"):
            import imij_plugins.pillow  # registers IMI in this process, not in spawned workers
        if how == "initializer":  # the documented way that needs no .pth (docs/PILLOW_AUTOLOAD.md)
            options["initializer"] = imij_plugins.pillow.register_pillow
        with multiprocessing.get_context("spawn").Pool(2, **options) as pool:
            print(json.dumps(pool.map(worker.describe, paths, chunksize=1)))
"""


@pytest.mark.parametrize("how", ["initializer", "worker-module", "hook", "parent-only"])
def test_spawn_pool_workers_open_imi(how, env, image, tmp_path):
    """The ways docs/PILLOW_AUTOLOAD.md gives work; registering in the parent alone does not."""
    worker = textwrap.dedent(WORKER)
    if how == "worker-module":
        worker = "import imij_plugins  # noqa: F401  (registers IMI wherever this module is imported)\n" + worker
    (tmp_path / "worker.py").write_text(worker)
    (tmp_path / "main.py").write_text(textwrap.dedent(SPAWN_MAIN))
    if how == "hook":
        env.autoload("enable", tmp_path)
    result = env.run("main.py", how, *[str(image)] * 4, cwd=tmp_path, check=False)
    if how == "parent-only":  # a new interpreter imports the worker's module, not what the parent imported
        assert result.returncode != 0 and "UnidentifiedImageError" in result.stderr
    else:
        assert result.returncode == 0, result.stderr
        assert json.loads(result.stdout) == [["IMI", [64, 48]]] * 4

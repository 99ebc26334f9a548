"""Registration: idempotent, cheap, by import or by call; options."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest
from PIL import Image

import imij_plugins.pillow
from imij_plugins.pillow import ImiImagePlugin
from imij_plugins.signature import is_imi

from .startup import pil_image_own_modules


def _run(code: str) -> str:
    result = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stderr
    return result.stdout.strip()


def test_importing_the_plugin_module_registers():
    out = _run(
        """
        from PIL import Image
        import imij_plugins.pillow.ImiImagePlugin
        print(Image.OPEN["IMI"][0].__name__, Image.EXTENSION[".imi"], Image.MIME["IMI"], "IMI" in Image.SAVE, "IMI" in Image.SAVE_ALL)
        """
    )
    assert out == "ImiImageFile IMI image/x.imi True True"


def test_importing_the_plugin_module_first_registers_silently():
    """The plugin's own ``from PIL import Image`` runs the package's Pillow callback mid-import."""
    result = subprocess.run(
        [sys.executable, "-c", "import imij_plugins.pillow.ImiImagePlugin as p; from PIL import Image; print(Image.OPEN['IMI'][0].__name__)"],
        capture_output=True, text=True, check=True,
    )
    assert (result.stdout.strip(), result.stderr) == ("ImiImageFile", "")


def test_register_pillow_then_open_and_save_a_path(tmp_path):
    out = _run(
        f"""
        from PIL import Image
        import imij_plugins.pillow
        imij_plugins.pillow.register_pillow()
        Image.new("RGB", (3, 2), (1, 2, 3)).save({str(tmp_path / "x.imi")!r})
        with Image.open({str(tmp_path / "x.imi")!r}) as im:
            print(im.format, im.size, im.getpixel((0, 0)))
        """
    )
    assert out == "IMI (3, 2) (1, 2, 3)"


def test_importing_imij_plugins_registers(tmp_path):
    """One ``import imij_plugins`` is all Pillow needs (it reads no entry points)."""
    assert _run("import imij_plugins; from PIL import Image; print('IMI' in Image.OPEN)") == "True"
    path = tmp_path / "x.imi"
    out = _run(
        f"""
        import imij_plugins
        from PIL import Image
        Image.new("L", (2, 2), 7).save({str(path)!r})
        with Image.open({str(path)!r}) as im:
            print(im.format, im.getpixel((1, 1)))
        """
    )
    assert out == "IMI 7"


def test_register_pillow_is_idempotent():
    imij_plugins.pillow.register_pillow()
    imij_plugins.pillow.register_pillow()
    assert Image.ID.count("IMI") == 1
    assert Image.OPEN["IMI"][0] is imij_plugins.pillow.ImiImageFile


def test_register_pillow_restores_a_removed_registration():
    del Image.OPEN["IMI"]
    Image.ID.remove("IMI")
    imij_plugins.pillow.register_pillow()
    assert Image.OPEN["IMI"] == (ImiImagePlugin.ImiImageFile, is_imi)


def test_options_are_set_and_kept():
    saved = (ImiImagePlugin.DECODE_THREADS, ImiImagePlugin.VERIFY_CHECKSUMS)
    try:
        imij_plugins.pillow.register_pillow(decode_threads=4, verify_checksums=False)
        imij_plugins.pillow.register_pillow()  # options left out keep their value
        assert (ImiImagePlugin.DECODE_THREADS, ImiImagePlugin.VERIFY_CHECKSUMS) == (4, False)
        with pytest.warns(UserWarning, match="Unknown option: thumbnails"):
            imij_plugins.pillow.register_pillow(thumbnails=False)
    finally:
        ImiImagePlugin.DECODE_THREADS, ImiImagePlugin.VERIFY_CHECKSUMS = saved


def test_the_package_exports():
    assert set(imij_plugins.pillow.__all__) == {"ImiImageFile", "register_pillow"}
    assert imij_plugins.pillow.ImiImageFile.format == "IMI"


# --- lazy registration: the codec loads on the first .imi open or save ---------------------------------

CODEC = ("numpy", "cffi", "_cffi_backend", "imij_plugins.api", "imij_plugins.payload", "imij_plugins.container", "imij_plugins.pillow.ImiImagePlugin")

LOADED = (
    "import sys; loaded = lambda: sorted(m for m in sys.modules if m not in PIL_OWN and "
    "(m.startswith(CODEC) or m.split('.')[0] in ('PIL', 'imageio')))"
)


def _loaded_codec_then(code: str) -> str:
    """Run ``code`` after a line that defines ``loaded()``: the codec and library modules imported so far,
    without those ``import PIL.Image`` loads by itself (Pillow 9 and 10 import cffi)."""
    return _run(f"CODEC = {CODEC!r}\nPIL_OWN = {sorted(pil_image_own_modules())!r}\n{LOADED}\n{textwrap.dedent(code)}")


@pytest.mark.parametrize("first_use", ["open", "save", "save_all"])
def test_import_imij_plugins_loads_nothing_until_the_first_imi_open_or_save(first_use, tmp_path):
    path = str(tmp_path / "x.imi")
    Image.new("RGB", (3, 2), (1, 2, 3)).save(path, format="IMI")
    use = {
        "open": f"Image.open({path!r}).load()",
        "save": f"Image.new('L', (2, 2)).save({path!r})",
        "save_all": f"Image.new('L', (2, 2)).save({path!r}, save_all=True, append_images=[Image.new('L', (2, 2), 9)])",
    }[first_use]
    out = _loaded_codec_then(
        f"""
        import imij_plugins
        print(loaded())
        from PIL import Image
        print([m for m in loaded() if not m.startswith("PIL")], Image.OPEN["IMI"][0].__name__, Image.EXTENSION[".imi"], Image.MIME["IMI"])
        {use}
        print(Image.OPEN["IMI"][0] is sys.modules["imij_plugins.pillow.ImiImagePlugin"].ImiImageFile, Image.open({path!r}).format)
        """
    )
    assert out.splitlines() == ["[]", "[] _open IMI image/x.imi", "True IMI"]  # the real plugin replaced the stand-ins


def test_register_pillow_registers_stand_ins_then_the_plugin(tmp_path):
    out = _loaded_codec_then(
        f"""
        from PIL import Image
        import imij_plugins.pillow
        imij_plugins.pillow.register_pillow()
        print([m for m in loaded() if not m.startswith("PIL")], Image.ID.count("IMI"), "IMI" in Image.SAVE, "IMI" in Image.SAVE_ALL)
        Image.new("RGB", (3, 2), (1, 2, 3)).save({str(tmp_path / "x.imi")!r})
        imij_plugins.pillow.register_pillow()  # the plugin is loaded: its own entries, not the stand-ins again
        print(Image.OPEN["IMI"][0].__name__, Image.ID.count("IMI"))
        """
    )
    assert out.splitlines() == ["[] 1 True True", "ImiImageFile 1"]


def test_the_stand_ins_accept_the_signature_only():
    out = _loaded_codec_then(
        """
        import imij_plugins
        from PIL import Image
        accept = Image.OPEN["IMI"][1]
        print(accept(b"IMIJ\\r\\n\\x87\\n" + bytes(8)), accept(b"\\x89PNG\\r\\n\\x1a\\n" + bytes(8)), accept(b"IMIJ"), [m for m in loaded() if not m.startswith("PIL")])
        """
    )
    assert out == "True False False []"  # checked without loading the codec

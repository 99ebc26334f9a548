"""Registration: idempotent, cheap, by import or by call; options."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest
from PIL import Image

import imij_plugins.pillow
from imij_plugins.pillow import ImiImagePlugin


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
    assert Image.OPEN["IMI"] == (ImiImagePlugin.ImiImageFile, ImiImagePlugin._accept)


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

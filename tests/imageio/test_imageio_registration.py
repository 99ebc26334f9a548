"""Registration with imageio and how imopen picks (or refuses) the IMI plugin."""

from __future__ import annotations

import io
import subprocess
import sys
import textwrap

import imageio.v3 as iio
import numpy as np
import pytest
from imageio.config import FileExtension, known_extensions, known_plugins
from imageio.core.request import InitializationError, Request
from PIL import Image

from imij_plugins.imageio import ImiPlugin, register_imageio

SIGNATURE = b"IMIJ\r\n\x87\n"  # spec 1


def image() -> np.ndarray:
    return np.arange(5 * 6 * 3, dtype=np.uint8).reshape(5, 6, 3)


def test_plugin_class_works_without_registration(unregistered, tmp_path):
    path = tmp_path / "a.imi"
    iio.imwrite(path, image(), plugin=ImiPlugin)
    assert path.read_bytes()[:8] == SIGNATURE
    np.testing.assert_array_equal(iio.imread(path, plugin=ImiPlugin), image())


def test_unregistered_imageio_does_not_pick_the_plugin(unregistered, tmp_path):
    """The pitfall registration exists for: with Pillow unaware of IMI, imageio's fallback
    reaches tifffile, which writes a TIFF into x.imi."""
    path = tmp_path / "x.imi"
    with iio.imopen(path, "w") as f:
        assert not isinstance(f, ImiPlugin)
        f.write(image())
    if ".imi" not in Image.registered_extensions():
        assert path.read_bytes()[:4] == b"II*\x00"


def test_registered_imwrite_writes_imi(registered, tmp_path):
    path = tmp_path / "x.imi"
    iio.imwrite(path, image())
    assert path.read_bytes()[:8] == SIGNATURE
    np.testing.assert_array_equal(iio.imread(path), image())


def test_importing_imij_plugins_registers_when_imageio_is_imported(tmp_path):
    """``import imij_plugins`` imports neither imageio nor numpy: it registers once the program imports imageio."""
    path = tmp_path / "x.imi"
    code = f"""
        import sys
        import imij_plugins
        print(sorted(m for m in sys.modules if m.split(".")[0] in ("imageio", "numpy")))
        import imageio.v3 as iio
        from imageio.config import known_plugins
        print(list(known_plugins)[0], known_plugins.get("IMIJSET") is not None)
        iio.imwrite({str(path)!r}, __import__("numpy").zeros((2, 3), "uint8"))
        """
    result = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, check=False)
    assert (result.stdout, result.stderr) == ("[]\nIMI True\n", "")
    assert path.read_bytes()[:8] == SIGNATURE


def test_register_is_idempotent(registered):
    order = list(known_plugins)
    register_imageio()
    register_imageio()
    assert list(known_plugins) == order
    assert known_plugins["IMI"].plugin_class is ImiPlugin
    assert [fmt.priority for fmt in known_extensions[".imi"]] == [["IMI"]]
    assert order[0] == "IMI"  # first in the fallback too


def test_register_goes_first_in_an_existing_entry(unregistered):
    known_extensions[".imi"] = [
        FileExtension(extension=".imi", priority=["pillow"]),
        FileExtension(extension=".imi", priority=["IMI", "tifffile"]),
    ]
    register_imageio()
    assert [fmt.priority for fmt in known_extensions[".imi"]] == [["IMI", "pillow"], ["tifffile"]]


def test_read_refuses_other_formats(tmp_path):
    path = tmp_path / "a.png"
    iio.imwrite(path, image())
    with pytest.raises(InitializationError, match="not an IMI file"):
        ImiPlugin(Request(path, "r"))
    with pytest.raises(OSError, match="can not handle"):
        iio.imread(path, plugin=ImiPlugin)


@pytest.mark.filterwarnings("ignore::DeprecationWarning")  # legacy plugins tried on the way
def test_fallback_reads_imi_bytes_without_extension(registered):
    data = iio.imwrite("<bytes>", image(), extension=".imi")
    np.testing.assert_array_equal(iio.imread(data), image())


def test_search_does_not_write_imi_to_other_extensions(only_imi, tmp_path):
    """Found by imopen's search, the plugin takes only .imi targets (imopen.py fallback loop)."""
    with pytest.raises(OSError, match="Could not find a backend"):
        iio.imwrite(tmp_path / "x.foo", image())
    assert not (tmp_path / "x.foo").exists()


@pytest.mark.parametrize("plugin", [ImiPlugin, "IMI"])
def test_named_plugin_takes_imi_and_extensionless_targets(registered, tmp_path, plugin):
    """As imageio's own plugins, the plugin checks the target's extension, named or found:
    another extension needs extension='.imi'; a file object (no extension) is written as IMI."""
    path = tmp_path / "x.png"
    with pytest.raises(OSError, match="can not handle"):
        iio.imwrite(path, image(), plugin=plugin)
    assert not path.exists()
    iio.imwrite(path, image(), plugin=plugin, extension=".imi")
    assert path.read_bytes()[:8] == SIGNATURE
    buffer = io.BytesIO()
    iio.imwrite(buffer, image(), plugin=plugin)
    assert buffer.getvalue()[:8] == SIGNATURE


def test_extension_hint_selects_imi(registered, tmp_path):
    path = tmp_path / "x.bin"
    iio.imwrite(path, image(), extension=".imi")
    assert path.read_bytes()[:8] == SIGNATURE


def test_fallback_prefers_imi_when_pillow_knows_imi_too(registered):
    """Bytes and file objects go through imopen's fallback, where IMI comes before pillow:
    the exact reader, not Pillow's (which has no mode for GrayAlpha int16)."""
    pillow_adapter = pytest.importorskip("imij_plugins.pillow")
    pillow_adapter.register_pillow()
    a = np.arange(-12, 12, dtype=np.int16).reshape(3, 4, 2)
    data = iio.imwrite("<bytes>", a, extension=".imi")
    np.testing.assert_array_equal(iio.imread(data), a)
    np.testing.assert_array_equal(iio.imread(io.BytesIO(data)), a)

"""The npe2 reader on URLs: napari hands them through unchanged; layers equal the local ones."""

from __future__ import annotations

import numpy as np
from extras import require

from imij_plugins import imijset
from imij_plugins.napari.reader import get_reader
from remote.images import textured
from remote.server import FileServer, Served

npe2 = require("npe2")
require("aiohttp")  # the 'remote' extra, for HTTP


def test_a_url_is_read_by_the_plugin(server: FileServer, served: Served, small) -> None:
    img, data = small
    served.files["/scan.imi"] = data
    pm = npe2.PluginManager.instance()
    pm.discover()
    url = server.url("scan.imi")
    assert any(r.plugin_name == "imij-plugins" for r in pm.iter_compatible_readers([url]))
    ((layer, kwargs, kind),) = npe2.read([url], stack=False)
    assert kind == "image" and kwargs["name"] == "scan" and kwargs["rgb"]
    np.testing.assert_array_equal(np.asarray(layer), img)


def test_signed_urls_and_stacks(server: FileServer, served: Served, small) -> None:
    """A query (a signed URL's) is not the extension; several URLs of one shape stack into one layer."""
    img, data = small
    served.files["/a.imi"] = served.files["/b.imi"] = data
    urls = [server.url("a.imi") + "?X-Amz-Signature=00", server.url("b.imi")]
    read = get_reader(urls)
    assert read is not None and get_reader(server.url("a.png?x=.imi")) is None
    ((layer, kwargs, _),) = read(urls)
    assert kwargs["name"] == "a" and layer.shape == (2, *img.shape)
    np.testing.assert_array_equal(np.asarray(layer[1]), img)


def test_an_archive_url(server: FileServer, served: Served, tmp_path) -> None:
    images = [textured(32, 48, seed) for seed in range(3)]
    path = tmp_path / "set.imijset"
    with imijset.open(path, "w") as arc:
        for key, img in enumerate(images):
            arc.append(key, img)
    served.files["/set.imijset"] = path.read_bytes()
    read = get_reader(server.url("set.imijset"))
    assert read is not None
    ((layer, kwargs, _),) = read(server.url("set.imijset"))
    assert kwargs["name"] == "set"
    np.testing.assert_array_equal(np.asarray(layer), np.stack(images))

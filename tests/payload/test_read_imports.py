"""A read loads none of the entropy encoder's modules (they cost import time; issue: writers out
of the read path). Checked in a fresh interpreter, since this test process has imported them."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

import imij_plugins

ENCODER_MODULES = [f"imij_plugins.payload.entropy.{name}" for name in (
    "scratch", "residuals", "context_stats", "estimate", "search", "palettes", "streams", "mapchoice", "modeling",
    "level_writer", "encoder")] + ["imij_plugins.writer", "imij_plugins.payload.quick.writer", "imij_plugins.container.writer"]

READ = """
import sys
import imij_plugins
image = imij_plugins.read(sys.argv[1])
assert image.shape == (40, 30, 3), image.shape
assert not {"asyncio", "fsspec"} & set(sys.modules), "a local read imported the remote machinery"
print(" ".join(sorted(m for m in sys.modules if m.startswith("imij_plugins."))))
"""


@pytest.mark.parametrize("codec", ["entropy", "quick"])
def test_read_loads_no_encoder_module(tmp_path, codec):
    path = tmp_path / "image.imi"
    image = np.random.default_rng(3).integers(0, 256, (40, 30, 3), dtype=np.uint8)
    imij_plugins.write(path, image, codec=codec)
    done = subprocess.run([sys.executable, "-c", READ, str(path)], capture_output=True, text=True, check=True)
    loaded = set(done.stdout.split())
    assert "imij_plugins.payload.entropy.decoder" in loaded or codec == "quick"  # the check sees the read path
    assert not loaded & set(ENCODER_MODULES)

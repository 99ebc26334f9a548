"""What ``import PIL.Image`` loads by itself, so start-up tests count only what IMI adds."""

from __future__ import annotations

import functools
import subprocess
import sys

_CODE = "import sys; before = set(sys.modules); import PIL.Image; print(' '.join(sorted(set(sys.modules) - before)))"


@functools.cache
def pil_image_own_modules() -> frozenset[str]:
    """Modules a plain ``import PIL.Image`` imports in a fresh interpreter (Pillow 9 and 10 import cffi),
    never ours, even where an autoload hook is enabled."""
    result = subprocess.run([sys.executable, "-c", _CODE], capture_output=True, text=True, check=True)
    return frozenset(m for m in result.stdout.split() if not m.startswith(("imij_plugins", "_imij")))

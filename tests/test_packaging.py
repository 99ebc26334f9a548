"""The sdist ships every C source and header the cffi build needs (ECOSYSTEM.md section 4)."""

import os
import pathlib
import subprocess
import sys
import tarfile

ROOT = pathlib.Path(__file__).resolve().parents[1]


def test_sdist_contains_every_c_file(tmp_path):
    script = f"from setuptools import build_meta; print(build_meta.build_sdist({str(tmp_path)!r}))"
    result = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    name = result.stdout.strip().splitlines()[-1]
    with tarfile.open(tmp_path / name) as tar:
        shipped = {pathlib.PurePosixPath(n).name for n in tar.getnames() if "/csrc/" in n}
    expected = {p.name for p in (ROOT / "csrc").iterdir() if p.suffix in (".c", ".h", ".inc")}
    assert expected <= shipped, expected - shipped
    assert os.path.exists(ROOT / "MANIFEST.in")

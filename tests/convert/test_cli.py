"""``imij convert`` on folders: layout, resuming, overwriting, bad inputs, JSON, jobs, Ctrl-C."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from extras import require

import imij_plugins
from imij_plugins.cli import main

from .conftest import write_pngs

MIXED_OUTPUTS = ["deeper.imi", "paint.imi", "rgb.imi", "sub/anim.imi", "sub/deeper/alpha.imi", "sub/photo.imi", "sub/stack.imi"]


def outputs(root: Path) -> list[str]:
    return sorted(p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file())


def test_folder_layout_is_kept(mixed, tmp_path, capsys):
    assert main(["convert", str(mixed), "-o", str(tmp_path / "out"), "-j", "1"]) == 0
    assert outputs(tmp_path / "out") == MIXED_OUTPUTS
    out = capsys.readouterr().out
    assert out.startswith("converted 7, skipped 0, failed 0 in ") and "bytes in " in out


def test_glob_and_a_single_file_to_a_named_output(mixed, tmp_path):
    assert main(["convert", str(mixed), "-o", str(tmp_path / "out"), "--glob", "*.png", "-j", "1"]) == 0
    assert outputs(tmp_path / "out") == ["rgb.imi"]
    assert main(["convert", str(tmp_path / "out" / "rgb.imi"), "-o", str(tmp_path / "back.png")]) == 0
    assert (tmp_path / "back.png").read_bytes().startswith(b"\x89PNG")


def test_outputs_beside_inputs_and_reruns_skip_or_refuse(mixed, capsys):
    (mixed / "sub" / "anim.gif").rename(mixed / "anim.gif")  # one output per folder name stem
    assert main(["convert", str(mixed / "rgb.png"), str(mixed / "sub"), "-j", "1", "--quiet"]) == 0
    assert (mixed / "rgb.imi").exists() and (mixed / "sub" / "stack.imi").exists()
    before = (mixed / "rgb.imi").stat().st_mtime_ns
    assert main(["convert", str(mixed / "rgb.png"), "-j", "1"]) == 1  # exists: refused without --overwrite
    assert "output exists" in capsys.readouterr().out
    assert main(["convert", str(mixed / "rgb.png"), str(mixed / "sub"), "--skip-existing", "-j", "1"]) == 0
    assert capsys.readouterr().out.startswith("converted 0, skipped 4, failed 0")  # the walk leaves the .imi outputs out
    assert main(["convert", str(mixed / "rgb.png"), "--overwrite", "-j", "1"]) == 0
    assert (mixed / "rgb.imi").stat().st_mtime_ns >= before


def test_bad_inputs_fail_and_the_batch_goes_on(mixed, tmp_path, capsys):
    (mixed / "notes.txt").write_text("not an image\n")
    (mixed / "cut.png").write_bytes((mixed / "rgb.png").read_bytes()[:200])
    assert main(["convert", str(mixed), "-o", str(tmp_path / "out"), "-j", "1", "--json"]) == 1
    captured = capsys.readouterr()
    records = {Path(r["input"]).name: r for r in map(json.loads, captured.out.splitlines()[:-1])}
    assert len(records) == 9
    assert records["notes.txt"]["status"] == records["cut.png"]["status"] == "failed"
    assert "cannot identify image file" in records["notes.txt"]["reason"]
    assert "truncated" in records["cut.png"]["reason"]
    good = records["rgb.png"]
    assert good["status"] == "converted" and good["reason"] == "" and good["seconds"] > 0
    assert good["ratio"] == good["bytes_out"] / good["bytes_in"]
    assert outputs(tmp_path / "out") == MIXED_OUTPUTS
    assert "failed 2" in captured.err and "notes.txt: UnidentifiedImageError" in captured.err


def test_two_jobs_write_the_same_files_as_one(mixed, tmp_path):
    assert main(["convert", str(mixed), "-o", str(tmp_path / "one"), "-j", "1", "-q"]) == 0
    assert main(["convert", str(mixed), "-o", str(tmp_path / "two"), "-j", "2", "-q"]) == 0
    for name in MIXED_OUTPUTS:
        assert (tmp_path / "one" / name).read_bytes() == (tmp_path / "two" / name).read_bytes()


def test_inputs_sharing_a_stem_keep_their_whole_names(mixed, tmp_path, capsys):
    (mixed / "rgb.jpg").write_bytes((mixed / "sub" / "photo.jpg").read_bytes())
    assert main(["convert", str(mixed), "-o", str(tmp_path / "o"), "-j", "1", "--json"]) == 0
    names = outputs(tmp_path / "o")
    assert "rgb.png.imi" in names and "rgb.jpg.imi" in names and "rgb.imi" not in names
    captured = capsys.readouterr()
    renamed = json.loads(captured.out.splitlines()[-1])["summary"]["renamed"]
    assert {Path(k).name: Path(v).name for k, v in renamed.items()} == {"rgb.png": "rgb.png.imi", "rgb.jpg": "rgb.jpg.imi"}
    assert "named after the whole input name (inputs sharing a stem): 2" in captured.err


def test_bad_arguments_exit_2(mixed, tmp_path, capsys):
    (tmp_path / "x.png").write_bytes(b"")
    (tmp_path / "x.png.png").write_bytes(b"")
    assert main(["convert", str(tmp_path / "x.png"), str(tmp_path / "x.png.png"), str(tmp_path / "x.png"), "-o", str(tmp_path / "o")]) == 2
    assert main(["convert", str(mixed / "rgb.png"), "-o", str(tmp_path / "x.jpg")]) == 2
    assert main(["convert", str(mixed / "rgb.png"), "--effort", "10"]) == 2
    err = capsys.readouterr().err
    assert "would both write" in err and "no output format" in err and "effort must be" in err


def test_library_warnings_go_to_the_summary_counted(tmp_path, monkeypatch, capsys):
    from PIL import Image

    paths = write_pngs(tmp_path / "in", 3, size=(20, 20))
    monkeypatch.setattr(Image, "MAX_IMAGE_PIXELS", 300)  # 400 pixels: a DecompressionBombWarning each
    assert main(["convert", str(tmp_path / "in"), "-o", str(tmp_path / "out"), "-j", "1"]) == 0
    captured = capsys.readouterr()
    assert captured.err == ""  # nothing printed through (or beside) the progress bar
    assert "warnings: 3 from 3 files" in captured.out
    assert "  3 x DecompressionBombWarning: Image size (N pixels) exceeds limit of N pixels" in captured.out
    assert len(paths) == 3


def test_ctrl_c_leaves_no_partial_file(tmp_path):
    write_pngs(tmp_path / "in", 60, size=(256, 256))
    out = tmp_path / "out"
    cmd = [sys.executable, "-m", "imij_plugins.cli", "convert", str(tmp_path / "in"), "-o", str(out), "-j", "2", "--effort", "9"]
    # as a terminal's foreground job: SIGINT at its default even when this run was started in the
    # background, where the shell makes commands ignore SIGINT and Python then keeps it ignored
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))  # fmt: skip
    deadline = time.monotonic() + 60
    while not (out.exists() and any(out.glob("*.imi"))) and time.monotonic() < deadline:
        time.sleep(0.02)
    os.killpg(proc.pid, signal.SIGINT)  # as a terminal's Ctrl-C: to the command and its workers
    stdout, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 130, stderr
    assert "Traceback" not in stderr and "KeyboardInterrupt" not in stderr, stderr
    written = sorted(out.iterdir())
    assert stdout.startswith(f"interrupted: converted {len(written)}, skipped 0, failed 0, not converted {60 - len(written)} in ")
    assert 0 < len(written) < 60
    for path in written:  # every file there is a whole, proved output
        assert path.suffix == ".imi" and imij_plugins.read(path).shape == (256, 256, 3)


def test_dask_cluster_writes_the_same_files_as_two_jobs(mixed, tmp_path):
    distributed = require("distributed")
    assert main(["convert", str(mixed), "-o", str(tmp_path / "jobs"), "-j", "2", "-q"]) == 0
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster:
        assert main(["convert", str(mixed), "-o", str(tmp_path / "dask"), "--dask", cluster.scheduler_address, "--json"]) == 0
    assert outputs(tmp_path / "dask") == MIXED_OUTPUTS
    for name in MIXED_OUTPUTS:
        assert (tmp_path / "jobs" / name).read_bytes() == (tmp_path / "dask" / name).read_bytes()


def test_dask_without_the_extra_names_it(mixed, tmp_path, monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "distributed", None)  # import distributed raises ImportError
    assert main(["convert", str(mixed), "-o", str(tmp_path / "o"), "--dask", "tcp://127.0.0.1:1"]) == 2
    assert "imij-plugins[dask]" in capsys.readouterr().err
    assert not (tmp_path / "o").exists()

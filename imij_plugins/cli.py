"""The ``imij`` command: ``info``, ``verify``, ``convert``, ``demo``, ``set`` and ``pillow-autoload``."""

from __future__ import annotations

import argparse
import compileall
import io
import json
import os
import site
import sys
import sysconfig
import tempfile
import time
from collections.abc import Sequence

import numpy as np

import _imij_pillow_autoload as hook
import imij_plugins
from imij_plugins.container.writer import write_atomic
from imij_plugins.convert import cli as convert_cli
from imij_plugins.desktop import cli as desktop_cli
from imij_plugins.errors import ImijError
from imij_plugins.remote import is_remote


def _storage_options(args: argparse.Namespace, path: str) -> dict[str, object] | None:
    """``--storage-option KEY=VALUE`` pairs for a URL's fsspec filesystem (a VALUE that parses as
    JSON is that value: ``anon=true``, ``client_kwargs={...}``); None for a local path."""
    if not is_remote(path) or not args.storage_option:
        return None
    options: dict[str, object] = {}
    for pair in args.storage_option:
        key, _, value = pair.partition("=")
        try:
            options[key] = json.loads(value)
        except ValueError:
            options[key] = value
    return options


def _info(path: str, storage_options: dict[str, object] | None) -> None:
    with imij_plugins.open(path, storage_options=storage_options) as f:
        h = f.header
        print(f"{path}:")
        print(f"  size        {f.width} x {f.height}")
        print(f"  samples     {h.sample_type.name} ({f.dtype}), layout {f.layout} ({f.channels} channels)")
        print(f"  coding      {'lossless' if h.coding == 0 else 'lossy'}, orientation {h.orientation}, alpha mode {h.alpha_mode}")
        print(f"  cicp        {'/'.join(map(str, h.effective_cicp))}   sig_bits {list(h.effective_sig_bits)}")
        print(f"  features    {', '.join(f.features) or 'none'}")
        print(f"  profiles    {', '.join(f.profiles)}")
        print(f"  frames      {f.n_frames}" + (f" ({f.kind}, loop {f.loop_count})" if f.kind else ""))
        print(f"  locator     {f.locator_status}")
        print("  chunks")
        for tag, size in f.chunks:
            print(f"    {tag}  {size:>12} bytes")
        payload = f.payload()
        g = payload.head.geometry
        kind = "quick-pixel units" if payload.head.quick else "entropy-coded units"
        print(f"  DATA        {kind}: {g.unit_count} units ({g.stripes} stripes of {g.stripe_rows} rows x {g.groups} groups)")


def cmd_info(args: argparse.Namespace) -> int:
    status = 0
    for path in args.files:
        try:
            _info(path, _storage_options(args, path))
        except (ImijError, OSError) as exc:
            print(f"{path}: error: {type(exc).__name__}: {exc}", file=sys.stderr)
            status = 1
    return status


def cmd_verify(args: argparse.Namespace) -> int:
    status = 0
    for path in args.files:
        try:
            with imij_plugins.open(path, storage_options=_storage_options(args, path)) as f:
                for index in range(f.n_frames):
                    f.read(index)
                psum = ", ".join(f.bitmap_status(i) for i in range(f.n_frames))
                print(
                    f"{path}: OK ({f.n_frames} frame{'s' if f.n_frames > 1 else ''}, {f.width}x{f.height} "
                    f"{f.layout} {f.dtype}; cSUM {f.checksum_status}; pSUM {psum})"
                )
        except (ImijError, OSError) as exc:
            print(f"{path}: FAILED: {type(exc).__name__}: {exc}")
            status = 1
    return status


def _best_of(fn, repeat: int = 3) -> float:
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def cmd_demo(args: argparse.Namespace) -> int:
    from PIL import Image

    from imij_plugins.samples import SAMPLES

    out_dir = args.out or tempfile.mkdtemp(prefix="imij-demo-")
    os.makedirs(out_dir, exist_ok=True)
    print(f"imij demo: backend {imij_plugins.backend}; writing to {out_dir}")
    print(f"{'sample':<16}{'shape':>16}{'raw':>10}{'IMI':>10}{'PNG':>10}{'IMI enc':>10}{'IMI dec':>10}{'PNG enc':>10}{'PNG dec':>10}")
    for name, make in SAMPLES.items():
        image = make()
        path = os.path.join(out_dir, f"{name}.imi")
        imij_plugins.write(path, image)
        encode_s = _best_of(lambda: imij_plugins.encode(image))
        decode_s = _best_of(lambda: imij_plugins.read(path))
        back = imij_plugins.read(path)
        exact = np.array_equal(back.reshape(image.shape).view(np.uint8), image.view(np.uint8))
        if not exact:
            print(f"{name}: round trip NOT exact", file=sys.stderr)
            return 1
        png = _png_bytes(image)
        png_size = "-" if png is None else f"{len(png):,}"
        png_enc = "-" if png is None else f"{_best_of(lambda: _png_bytes(image)) * 1e3:.1f}ms"
        png_dec = "-" if png is None else f"{_best_of(lambda: Image.open(io.BytesIO(png)).load()) * 1e3:.1f}ms"
        if png is not None:
            with open(os.path.join(out_dir, f"{name}.png"), "wb") as f:
                f.write(png)
        print(
            f"{name:<16}{str(image.shape):>16}{image.nbytes:>10,}{os.path.getsize(path):>10,}{png_size:>10}"
            f"{encode_s * 1e3:>8.1f}ms{decode_s * 1e3:>8.1f}ms{png_enc:>10}{png_dec:>10}"
        )
    print(f"all samples round-tripped exactly; files are in {out_dir}")
    return 0


def _png_bytes(image: np.ndarray) -> bytes | None:
    """PNG of the same image through Pillow, where PNG can hold it (not float samples)."""
    from PIL import Image

    if image.dtype == np.uint8:
        pil = Image.fromarray(image)
    elif image.dtype == np.uint16 and image.ndim == 2:
        pil = Image.fromarray(image)
    else:
        return None
    buf = io.BytesIO()
    pil.save(buf, format="PNG")
    return buf.getvalue()


PTH_NAME = "imij_plugins_pillow_autoload.pth"
HOOK_MODULE = hook.__name__


def _pth_line(hook_dir: str) -> str:
    """The .pth line: imports the hook, or does nothing, silently, when imij-plugins is gone.

    ``hook_dir`` is where the hook module was installed when the line was written. A per-user hook
    runs before site.py has put the system-wide site-packages on sys.path: when the hook is not
    importable yet, the line imports it from ``hook_dir``. A second hook (user and environment
    both enabled) finds it imported and does nothing; site.py running a venv's .pth files twice
    (CPython issue #75723) is the same case.
    """
    hook_file = os.path.join(hook_dir, f"{HOOK_MODULE}.py")
    code = (
        f"if {HOOK_MODULE!r} not in sys.modules:\n try:\n  import {HOOK_MODULE}\n except ImportError:\n"
        f"  import os\n  if os.path.isfile({hook_file!r}):\n   sys.path.append({hook_dir!r})\n"
        f"   try:\n    import {HOOK_MODULE}\n   finally:\n    sys.path.remove({hook_dir!r})\n"
    )
    return f"import sys; exec({ascii(code)})\n"  # ASCII: site.py reads .pth files in the locale encoding


def _is_site_dir(directory: str) -> bool:
    """Whether this Python runs the .pth files of ``directory`` at start-up (else the hook would never load)."""
    dirs = site.getsitepackages() + ([site.getusersitepackages()] if site.ENABLE_USER_SITE else [])
    return os.path.realpath(directory) in {os.path.realpath(d) for d in dirs}


def _permission_hints(action: str, user: bool) -> list[str]:
    """What to do when the site-packages directory is not writable: per user, or as an administrator."""
    hints = []
    if action == "enable" and not user and site.ENABLE_USER_SITE:
        user_pth = os.path.join(site.getusersitepackages(), PTH_NAME)
        hints.append(f"  for your user only: imij pillow-autoload enable --user (writes {user_pth})")
    hints.append(f"  for everyone using this Python: run 'imij pillow-autoload {action}' as an administrator")
    return hints


def cmd_pillow_autoload(args: argparse.Namespace) -> int:
    """Enable, disable or report the .pth hook that registers IMI for programs that never import imij_plugins."""
    directory = site.getusersitepackages() if args.user else args.site_dir or sysconfig.get_paths()["purelib"]
    path = os.path.join(directory, PTH_NAME)
    line = _pth_line(os.path.dirname(hook.__file__))
    try:
        with open(path, encoding="ascii", errors="replace") as f:
            current: str | None = f.read()
    except FileNotFoundError:
        current = None
    if args.action != "disable" and not _is_site_dir(directory):
        print(f"note: {directory} is not a site-packages directory of this Python: it runs no .pth file from there", file=sys.stderr)
    if args.action == "status":
        if current is None:
            print(f"Pillow autoload: disabled (no {path})")
        elif current == line:
            print(f"Pillow autoload: enabled ({path})")
        else:
            print(f"Pillow autoload: enabled by another version of imij-plugins ({path}); 'imij pillow-autoload enable' rewrites it")
        return 0
    try:
        if args.action == "enable":
            # The hook's .pyc, so that start-up loads it rather than compiling it (0.5 ms against 2 ms,
            # measured): pip writes .pyc files, but an editable install under PYTHONDONTWRITEBYTECODE has
            # none. Fails silently (a read-only install): then Python compiles it at each start-up.
            compileall.compile_file(hook.__file__, quiet=2)
            if current == line:
                print(f"Pillow autoload already enabled: {path}")
            else:
                if args.user:
                    os.makedirs(directory, exist_ok=True)  # the user site-packages may not exist yet
                write_atomic(path, line.encode("ascii"))  # a starting interpreter never reads half a .pth
                print(f"Pillow autoload {'enabled' if current is None else 'updated'}: {path}")
        elif current is None:
            print(f"Pillow autoload already disabled: no {path}")
        else:
            os.remove(path)
            print(f"Pillow autoload disabled: removed {path}")
    except OSError as exc:
        print(f"imij pillow-autoload {args.action}: cannot change {path}: {exc.strerror or exc}", file=sys.stderr)
        if isinstance(exc, PermissionError):
            print("\n".join(_permission_hints(args.action, args.user)), file=sys.stderr)
        return 1
    return 0


def _add_files(p: argparse.ArgumentParser) -> None:
    """FILE arguments (paths or URLs: docs/REMOTE.md) and the options of a URL's filesystem."""
    p.add_argument("files", nargs="+", metavar="FILE", help="a path, or a URL (https://, s3://, ...: read by ranges)")
    p.add_argument("--storage-option", action="append", default=[], metavar="KEY=VALUE",
                   help="an fsspec option for URLs, repeatable (VALUE as JSON when it parses: anon=true)")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="imij", description="Inspect, verify, convert and demonstrate IMI (.imi) files; set up Pillow autoload.")
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("info", help="print the header, features, profiles, chunks and frames of IMI files")
    _add_files(p)
    p.set_defaults(func=cmd_info)
    p = sub.add_parser("verify", help="decode every frame of IMI files; exit 0 only when all decode")
    _add_files(p)
    p.set_defaults(func=cmd_verify)
    convert_cli.add_parser(sub)
    desktop_cli.add_parser(sub)
    sub.add_parser("set", help="IMIJ-Set archives: ls, add, get, compact, verify (imij set --help)", add_help=False)
    p = sub.add_parser("demo", help="write built-in sample images as IMI and PNG, read them back, compare")
    p.add_argument("--out", metavar="DIR", help="where to write the files (default: a new temporary folder)")
    p.set_defaults(func=cmd_demo)
    p = sub.add_parser(
        "pillow-autoload",
        help="opt-in: register IMI with Pillow in programs that never import imij_plugins (a .pth start-up hook)",
        description="Install (enable), remove (disable) or show (status) a .pth hook in site-packages that registers "
        "IMI with Pillow when a program first imports PIL.Image. Run 'disable' before 'pip uninstall imij-plugins'.",
    )
    p.add_argument("action", choices=["enable", "disable", "status"])
    where = p.add_mutually_exclusive_group()
    where.add_argument(
        "--site-dir",
        metavar="DIR",
        help=f"the site-packages directory to change (default: this environment's, {sysconfig.get_paths()['purelib']})",
    )
    where.add_argument(
        "--user",
        action="store_true",
        help=f"change your user site-packages instead, creating it if needed ({site.getusersitepackages()})",
    )
    p.set_defaults(func=cmd_pillow_autoload)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["set"]:  # IMIJ-Set archives have their own subcommands
        from imij_plugins.imijset.cli import main_set

        return main_set(argv[1:])
    args = build_parser().parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())

"""``imij desktop install|uninstall`` and ``imij thumbnail``: the command-line front of the desktop integration."""

from __future__ import annotations

import argparse
import sys

from imij_plugins.desktop import freedesktop


def add_parser(sub: argparse._SubParsersAction) -> None:
    """The ``desktop`` and ``thumbnail`` subcommands and their options."""
    p = sub.add_parser(
        "desktop",
        help="install or remove the .imi MIME type and thumbnailer for file managers (freedesktop.org)",
        description=f"Write (install) or remove (uninstall) the shared-mime-info type {freedesktop.MIME_TYPE} "
        f"(the *.imi glob and the IMI signature as magic) and the thumbnailer entry {freedesktop.THUMBNAILER_FILE}, "
        "which runs 'imij thumbnail'. System-wide under PREFIX/share by default; for this user with --user.",
    )
    p.add_argument("action", choices=["install", "uninstall"])
    where = p.add_mutually_exclusive_group()
    where.add_argument("--user", action="store_true", help="this user's data folder: $XDG_DATA_HOME, default ~/.local/share")
    where.add_argument("--prefix", metavar="DIR", help=f"write under DIR/share (default {freedesktop.DEFAULT_PREFIX})")
    p.add_argument("--no-update-database", action="store_true", help="do not run update-mime-database afterwards")
    p.set_defaults(func=cmd_desktop)
    p = sub.add_parser(
        "thumbnail",
        help="write a PNG thumbnail of an IMI file (what the desktop thumbnailer runs)",
        description="Write a PNG of at most SIZE pixels on the longer side: from the file's preview (pRVW) when it has "
        "one large enough, else from its decoded first image. Exit status 1 with a one-line reason when it cannot.",
    )
    p.add_argument("input", metavar="IN", help="the IMI file")
    p.add_argument("output", metavar="OUT", help="the PNG file to write")
    p.add_argument("size", metavar="SIZE", type=int, help="the thumbnail's longer side in pixels")
    p.set_defaults(func=cmd_thumbnail)


def cmd_desktop(args: argparse.Namespace) -> int:
    """Install or uninstall; 1 with the path and a hint when a folder is not writable."""
    paths = freedesktop.Paths(freedesktop.data_dir(args.user, args.prefix))
    update = not args.no_update_database
    try:
        if args.action == "install":
            for path in freedesktop.install(paths, freedesktop.thumbnailer_command(), update):
                print(f"wrote {path}")
        else:
            removed = freedesktop.uninstall(paths, update)
            for path in removed:
                print(f"removed {path}")
            if not removed:
                print(f"nothing to remove under {paths.data_dir}")
    except OSError as exc:
        where = exc.filename or paths.data_dir
        hint = " (run it as root, or use --user for this user only)" if isinstance(exc, PermissionError) and not args.user else ""
        print(f"imij desktop {args.action}: cannot change {where}: {exc.strerror or exc}{hint}", file=sys.stderr)
        return 1
    return 0


def cmd_thumbnail(args: argparse.Namespace) -> int:
    """Render the thumbnail; 1 with a one-line reason (not a traceback) when the input cannot be shown."""
    from imij_plugins.desktop.thumbnail import png_bytes  # Pillow and the codec load only for this command

    try:
        data = png_bytes(args.input, args.size)
    except (SyntaxError, OSError, ValueError) as exc:  # SyntaxError: Pillow's "not this format"
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        print(f"imij thumbnail: {args.input}: {reason}", file=sys.stderr)
        return 1
    try:
        with open(args.output, "wb") as f:
            f.write(data)
    except OSError as exc:
        print(f"imij thumbnail: cannot write {args.output}: {exc.strerror or exc}", file=sys.stderr)
        return 1
    return 0

"""``python -m imij_plugins``: the ``imij`` command line, for when the script is not on PATH."""

import sys

from imij_plugins.cli import main

if __name__ == "__main__":
    sys.exit(main())

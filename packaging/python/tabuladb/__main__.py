"""``tabula …`` (the wheel's console script) and ``python -m tabuladb …``: run the binary."""

import os
import subprocess
import sys

from tabuladb import binary_path


def main():
    argv = [binary_path(), *sys.argv[1:]]
    if sys.platform == "win32":
        sys.exit(subprocess.call(argv))
    os.execv(argv[0], argv)


if __name__ == "__main__":
    main()

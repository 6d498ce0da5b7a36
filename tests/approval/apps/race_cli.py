"""Run one ``stopline`` command at an agreed moment: ``race_cli.py START_EPOCH ARGS...``.

Two of these started together import everything first, then sleep until ``START_EPOCH``, so
their commands reach the database within a millisecond or so of each other.
"""

from __future__ import annotations

import sys
import time

from stopline.cli.main import main

if __name__ == "__main__":
    start = float(sys.argv[1])
    time.sleep(max(0.0, start - time.time()))
    sys.exit(main(sys.argv[2:]))

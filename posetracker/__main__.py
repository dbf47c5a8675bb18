"""``python -m posetracker ...``: the command line (:mod:`posetracker.cli`)."""

import sys

from posetracker.cli import main

if __name__ == "__main__":
    sys.exit(main())

"""Run the PoseTracker desktop application: ``python main.py --help``."""

from ui.app import main

if __name__ == "__main__":
    raise SystemExit(main())

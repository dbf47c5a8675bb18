"""PoseTracker desktop application (PySide6 + pyqtgraph). The library lives in ``posetracker``."""

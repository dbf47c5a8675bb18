"""Several calibrated cameras seeing the same people (shapes: V views, T frames, K joints).

- :mod:`.calibration`: ``CameraCalibration`` (K, distortion, R, t world -> camera) and the calibration readers
  (Qualisys ``.qca.txt``; ``read_calibration`` picks by file name)
- :mod:`.triangulate`: robust confidence-weighted DLT over views, views that disagree dropped
- :mod:`.match`: which track of each view is which person (epipolar consistency over the clip)
- :mod:`.adjust`: a camera whose calibrated pose disagrees with the others' fitted to the people it sees
- :mod:`.reference`: tracking results of V views -> people in world metres, and how good that is
- :mod:`.sync`: views not started together, aligned by the people's motion (epipolar cost over frame lags)
- :mod:`.fuse`: the views' results -> one tracked sequence in the first camera's metres (``process --calibration``)
- :mod:`.process`: videos + calibration end to end (check the set-up, track, align, fuse, finish): what
  ``posetracker process cam1.mp4 cam2.mp4 ... --calibration`` and the app's File > Open several cameras run
- :mod:`.live`: the same live, one live session per source, each instant's people matched, triangulated and
  solved as it comes (``process SRC1 SRC2 --mode live --calibration``); :mod:`.live_sources`: the sources' frames
  paired by time
"""

from __future__ import annotations

from posetracker.multiview.calibration import CalibrationError, CameraCalibration, read_calibration, read_qca
from posetracker.multiview.match import PersonMatch, ViewTrack, match_tracks, person_views
from posetracker.multiview.triangulate import Triangulation, triangulate

__all__ = ["CalibrationError", "CameraCalibration", "PersonMatch", "Triangulation", "ViewTrack", "match_tracks",
           "person_views", "read_calibration", "read_qca", "triangulate"]

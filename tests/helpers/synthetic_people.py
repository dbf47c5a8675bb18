"""A synthetic person for tracking tests."""

from __future__ import annotations

import numpy as np

#: (18, 2) a standing person in human18 joint order, pixels relative to the hips' midpoint (~300 px tall)
STANDING = np.array(
    [
        [0, -120], [-6, -126], [6, -126], [-12, -122], [12, -122],  # nose, eyes, ears
        [-35, -90], [35, -90], [-45, -40], [45, -40], [-50, 5], [50, 5],  # shoulders, elbows, wrists
        [-20, 10], [20, 10], [-22, 80], [22, 80], [-24, 150], [24, 150],  # hips, knees, ankles
        [0, 12],  # centre (box centre)
    ],
    np.float64,
)

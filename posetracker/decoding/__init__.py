"""Decoding of the network outputs into 2-D people (method A steps 4-9), and its inverse.

- :mod:`.peaks`     step 4 centre peaks, candidate peaks per joint, sub-cell refinement
- :mod:`.tree`      :class:`TreeDecoder` (steps 4-9)
- :mod:`.people`    :class:`DecodedPeople`, the decoder's result
- :mod:`.assign`    step 8 multi-person peak selection (scores, one-to-one assignment)
- :mod:`.sampling`  nearest / bilinear reads of feature maps
- :mod:`.encode`    :func:`encode_targets`, the training-target encoder (decoder inverse)
- :mod:`.synthetic` stick figures and ideal network outputs (tests, demos; not re-exported)

Step 9 (depth, 3-D) is :mod:`posetracker.depth`; the decoder only reads the depth head.
"""

from posetracker.decoding.assign import assign_greedy, assign_hungarian, score_matrix
from posetracker.decoding.encode import encode_targets, fill_virtual_joints
from posetracker.decoding.peaks import (
    Candidates,
    Peaks,
    find_peaks,
    keypoint_candidates,
    local_maxima,
    refine_quadratic,
)
from posetracker.decoding.people import DecodedPeople
from posetracker.decoding.sampling import read_cells, sample_bilinear
from posetracker.decoding.tree import TreeDecoder, path_matrix

__all__ = [
    "Candidates",
    "DecodedPeople",
    "Peaks",
    "TreeDecoder",
    "assign_greedy",
    "assign_hungarian",
    "encode_targets",
    "fill_virtual_joints",
    "find_peaks",
    "keypoint_candidates",
    "local_maxima",
    "path_matrix",
    "read_cells",
    "refine_quadratic",
    "sample_bilinear",
    "score_matrix",
]

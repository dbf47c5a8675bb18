"""A body cut by the image border: its distance from the camera carried by the frames where it is whole.

A person who continues outside the image is read smaller than they are, with joints placed on the border, so
the depth read from them (the depth head, the body-scale cue) runs away as they leave: a walker leaving the
street clip at its left edge was read 5.0 -> 7.6 m away in 11 frames (its exported root 42 cm in one frame at
50 fps); the side-view walker leaving at the right edge sank 19 cm in her last 10 frames, a foot under the floor. What is wrong there is the
person's distance, not the body's shape or the camera rays through the joints.

So, per run of a track (before the motion solve fits each joint): the frames where a joint at least
``SURE`` sure lies within ``MARGIN`` of the image's long side from its border are *cut*; the person's depth
(the median depth of the sure joints) is fitted over the run with the solve's smoothness prior and no weight
on the cut frames (inside a run: bridged from both sides; at its ends: carried on at the speed of the frames
before); each cut frame's body is moved by the fitted depth minus the read one (its joints' depths shifted, its world
points moved as one along the camera ray through their median): the 2-D readings and the body's 3-D shape stay
as read (moving each joint along its own ray instead scaled the body with the distance: a person cut by the
image's foot read 7 % taller, PA-MPJPE 79.9 -> 84.8 mm on a held-out clip). A run with fewer than ``MIN_CLEAR`` frames clear of the border keeps its readings (a body always
cut has nothing better to go by). Each joint's own reading on the border or beyond it (placed there by the
network while the body continues outside) keeps ``JOINT_SHARE`` of its weight in the solve (:func:`border_weight`).
"""

from __future__ import annotations

import numpy as np
from scipy.linalg import solve_banded

MARGIN = 0.01  # a joint this share of the image's long side from the border: the body may continue outside
SURE = 0.3  # joints at least this sure mark a frame cut and give the person's depth
MIN_CLEAR = 10  # frames of a run clear of the border needed to carry the cut ones
SPAN_S = 0.3  # longest stretch a joint on the border is carried by the frames around (border_weight)
JOINT_SHARE = 1e-3  # the weight left to a joint's reading on the border (border_weight)


def border_cut(xy: np.ndarray, conf: np.ndarray, image_size: tuple[int, int]) -> np.ndarray:
    """xy (n, K, 2) px, conf (n, K) of one run, image_size (width, height) px -> (n,) bool: frames whose body
    the border cuts (a sure joint within MARGIN of it); all False where fewer than MIN_CLEAR frames are clear
    or the image size is unknown."""
    n = len(xy)
    w, h = image_size
    if w <= 0 or h <= 0:
        return np.zeros(n, bool)
    m = MARGIN * max(w, h)
    sure = (conf >= SURE) & np.isfinite(xy).all(-1)
    with np.errstate(invalid="ignore"):
        near = (xy[..., 0] < m) | (xy[..., 0] > w - 1 - m) | (xy[..., 1] < m) | (xy[..., 1] > h - 1 - m)
    cut = (sure & near).any(-1)
    if (~cut).sum() < MIN_CLEAR:
        return np.zeros(n, bool)
    return cut


def carry_depth(values: np.ndarray, conf: np.ndarray, cut: np.ndarray, prior: np.ndarray) -> np.ndarray:
    """The cut frames' readings moved along their rays to the person's depth carried from the whole frames.

    values: (n, K, C) one run's readings (x, y px, depth m, then world x, y, z m when C == 6; nan where unread);
    conf: (n, K); cut: (n,) bool (:func:`border_cut`); prior: (5, n) the solve's smoothness bands (lam D'D in
    ``solve_banded`` layout). Returns a new (n, K, C) array; unchanged where nothing is cut.
    """
    if not cut.any():
        return values
    depth = values[..., 2]
    sure = (conf >= SURE) & np.isfinite(depth) & (depth > 0)
    read = np.array([np.median(d[s]) if s.any() else np.nan for d, s in zip(depth, sure)])  # (n,) m
    w = np.where(~cut & np.isfinite(read), 1.0, 0.0)
    if np.count_nonzero(w) < 2:
        return values
    ab = prior.copy()
    ab[2] += w + 1e-9
    carried = solve_banded((2, 2), ab, w * np.nan_to_num(read))  # (n,) m
    clear = read[w > 0]
    carried = np.minimum(np.maximum(carried, clear.min()), clear.max())  # never beyond the depths read whole
    shift = np.where(cut & np.isfinite(read), carried - read, 0.0)  # (n,) m, 0 on whole frames
    out = values.copy()
    out[..., 2] = depth + shift[:, None]
    if values.shape[-1] >= 6:
        world = values[..., 3:6]
        with np.errstate(invalid="ignore"):
            centre = np.nanmedian(np.where(sure[..., None], world, np.nan), axis=1)  # (n, 3) the sure joints' m
            ray = centre / centre[:, 2:3]  # (n, 3) the camera ray through it, z = 1
        move = np.where(np.isfinite(ray), ray, 0.0) * shift[:, None]  # (n, 3) m, the whole body along it
        out[..., 3:6] = world + move[:, None, :]
    return out




def border_weight(xy: np.ndarray, ok: np.ndarray, image_size: tuple[int, int], max_span: int) -> np.ndarray:
    """How much each joint's reading counts where it lies on the image border: a joint of a body that continues
    outside is placed on the border and slides along it (the side-view walker's hip 9 cm down in her last 5
    frames, read 0.2-0.7 sure), so there the frames around carry it, for at most ``max_span`` frames in a row
    (over a longer stretch a joint's path carried on from the frames around is no better than the readings).

    xy (n, K, 2) px, ok (n, K) bool readings of one run; image_size (width, height) px -> (n, K): JOINT_SHARE
    where a joint lies within MARGIN of the border or beyond it for at most ``max_span`` frames in a row, 1
    elsewhere; a joint with fewer than MIN_CLEAR readings clear of the border keeps all its readings.
    """
    n, k = ok.shape
    w, h = image_size
    if w <= 0 or h <= 0:
        return np.ones((n, k))
    m = MARGIN * max(w, h)
    with np.errstate(invalid="ignore"):
        near = ok & ((xy[..., 0] < m) | (xy[..., 0] > w - 1 - m) | (xy[..., 1] < m) | (xy[..., 1] > h - 1 - m))
    out = np.ones((n, k))
    for j in np.flatnonzero(near.any(0) & ((ok & ~near).sum(0) >= MIN_CLEAR)):
        edges = np.flatnonzero(np.diff(np.r_[0, near[:, j].astype(np.int8), 0]))  # starts, ends of near stretches
        for a, b in zip(edges[::2], edges[1::2]):
            if b - a <= max_span:
                out[a:b, j] = JOINT_SHARE
    return out


__all__ = ["border_cut", "border_weight", "carry_depth"]

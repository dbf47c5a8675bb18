"""Small people: the frame also read as overlapping tiles, each at the network's input size.

A person 1/5 of a 1080p frame high is ~30 px tall in the 256-wide input, too small for the stride-4
heads; in a tile of 0.6 of the frame it is 1.7x larger. The people found in the tiles are added to
the whole frame's where they are new (keypoint similarity with every person already kept at most
``threshold``), so a person seen whole in the frame keeps the frame's reading; a tile's person that
crosses one of the tile's cuts through the frame is left to the frame or the overlapping tile.

Measured on the 8 labelled sets (``posetracker eval --tiles 1|2``, with the precision stage): a 2 x 2
grid of 0.6 tiles raised the mean PCK@0.1 0.774 -> 0.816 and OKS AP 0.694 -> 0.705, and the recall
of people at least 1/8 of the image high 35 -> 40 of 47; a 3 x 3 grid of 0.45 tiles gained no more
(``studies/small-people.md``).
"""

from __future__ import annotations

import warnings
from collections.abc import Callable

import numpy as np

from posetracker.decoding.people import DecodedPeople
from posetracker.oks import keypoint_bbox_area, oks

TILE_FRACTION = 0.6  # each tile's side as a share of the frame's


def tile_windows(width: int, height: int, grid: int, fraction: float = TILE_FRACTION) -> list[tuple[int, int, int, int]]:
    """(x0, y0, w, h) of ``grid`` x ``grid`` tiles of ``fraction`` of a width x height frame, spread evenly
    from edge to edge (they overlap when grid * fraction > 1); [] for grid <= 1."""
    if grid <= 1:
        return []
    tw, th = max(1, int(round(width * fraction))), max(1, int(round(height * fraction)))
    xs = [int(round(i * (width - tw) / (grid - 1))) for i in range(grid)]
    ys = [int(round(i * (height - th) / (grid - 1))) for i in range(grid)]
    return [(x, y, tw, th) for y in ys for x in xs]


def away_from_cuts(people: DecodedPeople, window: tuple[int, int, int, int], frame_size: tuple[int, int],
                   margin: float = 0.01, min_confidence: float = 0.1) -> DecodedPeople:
    """The people of a tile (keypoints in the frame's pixels) whose confident joints all keep ``margin`` x the
    tile's side from each edge where the tile cuts the frame: a person crossing a cut is partly outside the
    tile (its reading there is unreliable) and is whole in the frame or in the overlapping tile."""
    x0, y0, tw, th = window
    w, h = frame_size
    ok = people.confidence >= min_confidence
    x = np.where(ok, people.keypoints[..., 0], np.nan)
    y = np.where(ok, people.keypoints[..., 1], np.nan)
    with np.errstate(invalid="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # a person without confident joints: all-nan rows
        lo_x, hi_x, lo_y, hi_y = np.nanmin(x, 1), np.nanmax(x, 1), np.nanmin(y, 1), np.nanmax(y, 1)
    mx, my = margin * tw, margin * th
    keep = ok.any(axis=1)
    if x0 > 0:
        keep &= lo_x >= x0 + mx
    if x0 + tw < w:
        keep &= hi_x <= x0 + tw - mx
    if y0 > 0:
        keep &= lo_y >= y0 + my
    if y0 + th < h:
        keep &= hi_y <= y0 + th - my
    return people.take(np.flatnonzero(keep))


def shift_people(people: DecodedPeople, scale: float, offset: tuple[float, float] = (0.0, 0.0),
                 depth_zoom: float = 1.0) -> DecodedPeople:
    """People with keypoints and predictions mapped by ``xy / scale + offset`` (e.g. a tile's input pixels
    to the frame's source pixels) and the root depth read (column 0) multiplied by ``depth_zoom``: a tile
    shows its people ``depth_zoom`` times larger than the whole frame, so the head reads them that much
    nearer (edge depth differences are lengths and stay)."""
    off = np.asarray(offset, np.float32)
    reads = people.depth_reads.copy()
    reads[:, 0] *= depth_zoom
    return DecodedPeople((people.keypoints / scale + off).astype(np.float32), people.confidence, people.scores,
                         reads, (people.predicted / scale + off).astype(np.float32))


def add_new_people(kept: DecodedPeople, extra: DecodedPeople, sigmas: np.ndarray, max_people: int,
                   threshold: float = 0.5, min_confidence: float = 0.1) -> DecodedPeople:
    """``kept`` plus the people of ``extra`` (strongest first) whose keypoint similarity with every person
    kept so far is at most ``threshold``, over the joints confident in both (area: the kept person's keypoint
    box); both in the same pixels. Strongest first, at most ``max_people``. sigmas: (K,) (nan -> mean)."""
    if extra.num_people == 0:
        return kept
    sig = np.where(np.isfinite(sigmas), sigmas, np.nanmean(sigmas))
    xy = [p for p in kept.keypoints.astype(np.float64)]
    ok = [c >= min_confidence for c in kept.confidence]
    area = [max(float(a), 1.0) for a in keypoint_bbox_area(kept.keypoints.astype(np.float64), kept.confidence >= min_confidence)]
    added: list[int] = []
    for i in np.argsort(-extra.scores, kind="stable"):
        a, a_ok = extra.keypoints[i].astype(np.float64), extra.confidence[i] >= min_confidence
        same = False
        for b, b_ok, b_area in zip(xy, ok, area):
            both = a_ok & b_ok
            if both.sum() >= 2 and float(oks(((a - b) ** 2).sum(-1)[both], b_area, sig[both])) > threshold:
                same = True
                break
        if not same:
            added.append(int(i))
            xy.append(a)
            ok.append(a_ok)
            area.append(max(float(keypoint_bbox_area(a[None], a_ok[None])[0]), 1.0))
    if not added:
        return kept
    both = DecodedPeople.concat([kept, extra.take(np.array(added))])
    order = np.argsort(-both.scores, kind="stable")[:max_people]
    return both.take(order)


def add_tile_people(people: DecodedPeople, rgb: np.ndarray, grid: int,
                    read: Callable[[np.ndarray], tuple[DecodedPeople, float]], frame_scale: float, sigmas: np.ndarray,
                    max_people: int) -> DecodedPeople:
    """``people`` of an (H, W, 3) frame (its pixels) plus those found only in its ``grid`` x ``grid`` tiles.
    read: a tile (h, w, 3) -> its people in network-input pixels and the input's scale (input px per tile px);
    frame_scale: the whole frame's, so a tile's root depths are read ``scale / frame_scale`` times too near."""
    h, w = rgb.shape[:2]
    for x0, y0, tw, th in tile_windows(w, h, grid):
        tile, scale = read(np.ascontiguousarray(rgb[y0:y0 + th, x0:x0 + tw]))
        tile = shift_people(tile, scale, (x0, y0), depth_zoom=scale / frame_scale)
        people = add_new_people(people, away_from_cuts(tile, (x0, y0, tw, th), (w, h)), sigmas, max_people)
    return people


__all__ = ["TILE_FRACTION", "add_new_people", "add_tile_people", "away_from_cuts", "shift_people", "tile_windows"]

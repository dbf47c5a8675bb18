"""Method A steps 4-9: decode people from the heads' outputs by walking the skeleton tree (2-D).

Network outputs of one frame (numpy, stride ``s``: feature cell u -> input pixel u * s):

- ``heatmaps``: (K, h, w) in [0, 1]; channel ``spec.root`` is the body-centre heatmap
- ``offsets``:  (2K, h, w) sub-cell (dx, dy) of joint k at channels (2k, 2k+1), cells (optional)
- ``vectors``:  (2E, h, w) displacement (dx, dy) of edge e = ``spec.edges[e]`` (parent -> child), cells
- ``depth``:    (1+E, h, w) root depth (m) at channel 0, depth(child) - depth(parent) of edge e
                at channel 1+e (optional)

The tree walk (method A steps 6-7): a first keypoint is predicted from the person's centre, every other
joint from its *located* parent, predicted child = located parent + v(parent -> child) read at the
person's centre peak cell (nearest cell). With v(p -> c) = r(c) - r(p) of MoveNet's centre -> keypoint
regression r (r(root) = 0 at the centre cell), the step from a parent found where the regression put it
is MoveNet's ``centre + r(child)``; a parent found elsewhere carries its child along (12 held-out clips:
the walk beat MoveNet's centre read, ``studies/tree-walk.md``). A child whose parent was not found
in its heatmap (confidence < ``keypoint_threshold``) is predicted by the centre read instead, centre + the
edge vectors along its path (the *centre read*), so an unsure parent does not compound.

A child's peaks are scored against two predictions, the walk's and the centre read's, and each peak keeps
the better score (method A step 8: the peak matching the position predicted from the person's *own centre
or parent*). A parent taken from a neighbour in a crowd then no longer drags its child along, and a limb
the centre read places badly is still found from its parent; the child's predicted position
(``predicted``, and where a joint without a peak is put) stays the walk's.

Each candidate peak's sub-cell position is the vote of the offsets of the cells within
``vote_radius`` of it (:func:`posetracker.decoding.peaks.vote_offsets`; 0: the peak cell's
own offset, MoveNet's read), which holds a joint steady where its peak moves from cell to
cell.

Confidence (per joint) = heatmap value at the chosen peak x Gaussian distance weight
(see :mod:`posetracker.decoding.assign`). A joint without an acceptable peak keeps
its predicted position with confidence ``0.5 * min(heat at prediction,
keypoint_threshold)``, always below ``keypoint_threshold``: ``confidence >=
keypoint_threshold`` means "found in its heatmap". The root's confidence is its
centre peak value.

Person score = centre peak value x mean confidence of the non-root joints, so a
strong centre with no limbs found, or limbs around a weak centre, both score low.

Depth (step 9) is only read here: the root depth and each edge's difference at the centre
peak cell, where the vectors are read (``DecodedPeople.depth_reads``);
:mod:`posetracker.depth` sums them along the tree and lifts the people to 3-D.
"""

from __future__ import annotations

import numpy as np

from posetracker.decoding.assign import ASSIGNERS, score_matrix
from posetracker.decoding.people import DecodedPeople, check_outputs
from posetracker.decoding.peaks import Candidates, Peaks, find_peaks, keypoint_candidates, refine_quadratic
from posetracker.decoding.sampling import read_cells, sample_channels
from posetracker.defaults import DEFAULT_MAX_PEOPLE
from posetracker.skeletons import SkeletonSpec

KNOWN_COUNT_FLOOR = 0.03  # the faintest centre peak taken for one of a known number of animals
VOTE_RADIUS = 2  # cells around a keypoint peak whose offsets vote for its position (0: the peak cell's own)


class TreeDecoder:
    """Decode people from one frame of network outputs (method A steps 4-9).

    Distances are in feature cells. ``score_threshold``: minimum centre-heatmap peak
    for a person; ``keypoint_threshold``: minimum heatmap value of a candidate peak
    and minimum weighted score to accept it; ``min_centre_distance``: centre peaks
    closer than this to a stronger one are dropped; search window radius of a
    person = ``max(min_window, window_frac * size)`` with size = twice the longest
    centre -> first-keypoint vector; ``max_candidates``: peaks kept per joint heatmap;
    ``assign``: "greedy" (descending score) or "hungarian" (maximum total score);
    ``min_person_score``: people whose score (centre peak x mean joint confidence) is
    below it are dropped (a centre peak with no confident joint around it is no one).
    ``min_people``: a known number of animals (``PeopleSettings.known_count``): the
    ``min_people`` strongest readings are kept whatever their score, their centre peaks
    looked for down to ``KNOWN_COUNT_FLOOR`` where fewer stand above ``score_threshold``
    (the animal is there; a faint reading of it beats none).
    """

    def __init__(
        self,
        spec: SkeletonSpec,
        stride: int = 4,
        score_threshold: float = 0.1,
        keypoint_threshold: float = 0.1,
        max_people: int = DEFAULT_MAX_PEOPLE,
        min_centre_distance: float = 2.0,
        window_frac: float = 0.3,
        min_window: float = 2.0,
        max_candidates: int = 24,
        assign: str = "greedy",
        min_person_score: float = 0.0,
        min_people: int = 0,
        vote_radius: int = VOTE_RADIUS,
    ) -> None:
        if assign not in ASSIGNERS:
            raise ValueError(f"unknown assign {assign!r}; choices: {sorted(ASSIGNERS)}")
        if not keypoint_threshold > 0:
            raise ValueError(f"keypoint_threshold must be positive, got {keypoint_threshold}")
        self.spec = spec
        self.stride = int(stride)
        self.score_threshold = float(score_threshold)
        self.keypoint_threshold = float(keypoint_threshold)
        self.max_people = int(max_people)
        self.min_centre_distance = float(min_centre_distance)
        self.window_frac = float(window_frac)
        self.min_window = float(min_window)
        self.max_candidates = int(max_candidates)
        self.min_person_score = float(min_person_score)
        if not 0 <= min_people <= self.max_people:
            raise ValueError(f"min_people must be in [0, max_people={self.max_people}], got {min_people}")
        self.min_people = int(min_people)
        if not vote_radius >= 0:
            raise ValueError(f"vote_radius must be >= 0, got {vote_radius}")
        self.vote_radius = int(vote_radius)
        self._assign = ASSIGNERS[assign]
        # Method A step 5: split the skeleton into first keypoints (children of the
        # centre) and second keypoints (reached through other keypoints, tree-walk order).
        self.first_keypoints = tuple(spec.first_keypoints)
        self.second_keypoints = tuple(spec.second_keypoints)
        self._non_root = self.first_keypoints + self.second_keypoints
        self._parents = np.asarray(spec.parents, dtype=np.int64)
        self._edge_of = np.asarray(spec.edge_of_child, dtype=np.int64)
        self._first_edges = self._edge_of[list(self.first_keypoints)]
        self._path = path_matrix(spec)
        self._levels, self._rows = self._walk_levels()

    def _walk_levels(self) -> tuple[list[np.ndarray], list[np.ndarray]]:
        """Joints located together: the first keypoints, then the second keypoints one tree depth at a time,
        since each needs its located parent. Returns (joints per level, their candidate rows)."""
        levels = [np.asarray(self.first_keypoints, dtype=np.int64)]
        placed = {self.spec.root, *self.first_keypoints}
        rest = list(self.second_keypoints)
        while rest:
            level = [k for k in rest if self.spec.parents[k] in placed]
            placed.update(level)
            rest = [k for k in rest if k not in placed]
            levels.append(np.asarray(level, dtype=np.int64))
        row = {k: i for i, k in enumerate(self._non_root)}
        rows = [np.asarray([row[int(k)] for k in lv], dtype=np.int64) for lv in levels]
        return levels, rows

    def decode(self, outputs: dict[str, np.ndarray]) -> DecodedPeople:
        """Decode one frame. outputs: see the module docstring -> :class:`DecodedPeople`."""
        spec = self.spec
        n_joints, n_edges = spec.num_joints, spec.num_edges
        check_outputs(outputs, n_joints, n_edges)
        heat, vectors = outputs["heatmaps"], outputs["vectors"]
        offsets, depth = outputs.get("offsets"), outputs.get("depth")

        # Method A step 4: centre peaks -> one person each; root = centre peak + sub-cell refinement.
        centre_map = heat[spec.root]
        peaks = find_peaks(centre_map, self.score_threshold, self.max_people, self.min_centre_distance)
        if len(peaks) < self.min_people:  # a known number of animals: fainter centre peaks too
            peaks = find_peaks(centre_map, KNOWN_COUNT_FLOOR, self.max_people, self.min_centre_distance)
        people, scores, order = self._decode_peaks(peaks, heat, vectors, offsets, depth)
        if self.min_person_score <= 0:
            return people
        strong = np.sort(order[self._kept(scores)])  # their centre peaks
        if 0 < len(strong) < len(order):  # again without the weak: one may have taken a real person's joint
            peaks = Peaks(peaks.x[strong], peaks.y[strong], peaks.score[strong])
            people, scores, _ = self._decode_peaks(peaks, heat, vectors, offsets, depth)
        keep = self._kept(scores)
        return people if keep.all() else people.take(keep)

    def _kept(self, scores: np.ndarray) -> np.ndarray:
        """(P,) bool of people sorted by score (descending): at least ``min_person_score``, or among the first
        ``min_people``."""
        return (scores >= self.min_person_score) | (np.arange(len(scores)) < self.min_people)

    def _decode_peaks(self, peaks: Peaks, heat: np.ndarray, vectors: np.ndarray, offsets: np.ndarray | None,
                      depth: np.ndarray | None) -> tuple[DecodedPeople, np.ndarray, np.ndarray]:
        """Method A steps 4-9 for the given centre peaks -> (people by score, their (P,) scores before
        clipping, (P,) the index of each one's centre peak)."""
        spec = self.spec
        n_joints, n_edges = spec.num_joints, spec.num_edges
        centre_map = heat[spec.root]
        n = len(peaks)
        if n == 0:
            return DecodedPeople.empty(n_joints), np.zeros(0), np.zeros(0, np.int64)
        centre = np.stack([peaks.x, peaks.y], axis=1) + refine_quadratic(centre_map, peaks.x, peaks.y)
        walk = _Walk(n, n_joints, n_edges)
        walk.pos[:, spec.root] = walk.pred[:, spec.root] = centre
        walk.conf[:, spec.root] = peaks.score

        # Vectors and depth read at the centre peak cell: the walk's steps, person size, depths.
        at_centre = read_cells(vectors, peaks.x, peaks.y).reshape(n, n_edges, 2)
        walk.window = self._windows(at_centre)
        walk.at_centre = at_centre
        if depth is not None:
            walk.depth_reads = read_cells(depth, peaks.x, peaks.y)  # (P, 1+E)
        # the centre read (the walk's fallback and second hypothesis): centre + the edge vectors on the path
        walk.centre_pred = centre[:, None, :] + np.einsum("pec,ek->pkc", at_centre, self._path)

        # Method A step 8 (prepared once per frame): candidate peaks of every joint heatmap.
        cands = keypoint_candidates(heat, self._non_root, self.keypoint_threshold, self.max_candidates, offsets,
                                    vote_radius=self.vote_radius)

        # Method A step 6: first keypoints: predicted = centre + vector(centre -> k), then heatmap search.
        self._locate(self._levels[0], cands.rows(self._rows[0]), heat, walk)
        # Method A step 7: second keypoints by tree walk: predicted = located parent + vector(parent -> k).
        for level, rows in zip(self._levels[1:], self._rows[1:]):
            self._locate(level, cands.rows(rows), heat, walk)

        # Person score = centre peak value x mean confidence of the non-root joints.
        conf = walk.conf
        limbs = conf[:, list(self._non_root)].mean(axis=1) if self._non_root else np.ones(n)
        scores = peaks.score.astype(np.float64) * limbs
        order = np.argsort(-scores, kind="stable")
        s = float(self.stride)
        return DecodedPeople(
            keypoints=(walk.pos[order] * s).astype(np.float32),
            confidence=np.clip(conf[order], 0.0, 1.0).astype(np.float32),
            scores=np.clip(scores[order], 0.0, 1.0).astype(np.float32),
            depth_reads=walk.depth_reads[order],
            predicted=(walk.pred[order] * s).astype(np.float32),
        ), scores[order], order

    def _windows(self, at_centre: np.ndarray) -> np.ndarray:
        """Search radius per person (cells) from its size.

        at_centre: (P, E, 2) vectors at the centre cell -> (P,). Size = twice the
        longest centre -> first-keypoint vector (the torso's extent).
        """
        if self._first_edges.size == 0:
            return np.full(at_centre.shape[0], self.min_window)
        v = at_centre[:, self._first_edges]
        size = 2.0 * np.sqrt((v * v).sum(axis=-1).max(axis=1))
        return np.maximum(self.min_window, self.window_frac * size)

    def _locate(self, joints: np.ndarray, cands: Candidates, heat: np.ndarray, walk: _Walk) -> None:
        """Predict J joints of every person from their parents, then pick their peaks.

        joints: (J,) whose parents are placed; cands: their candidates; heat: (K, h, w).
        Updates ``walk.pos``, ``walk.pred``, ``walk.conf`` (P, J of K) in place.
        """
        # the walk: each child from its located parent by v(p -> c) read at the centre (method A steps 6-7)
        parents, edges = self._parents[joints], self._edge_of[joints]
        guess = walk.pos[:, parents] + walk.at_centre[:, edges]
        unsure = walk.conf[:, parents] < self.keypoint_threshold  # (P, J): the centre read's prediction instead
        guess = np.where(unsure[..., None], walk.centre_pred[:, joints], guess)
        walk.pred[:, joints] = guess
        g = guess.transpose(1, 0, 2)  # (J, P, 2)
        # Method A step 8: each person takes the peak matching its own prediction; no peak is shared.
        scores = score_matrix(g, walk.window, cands.xy, cands.heat, cands.valid)
        # step 8's "own centre/parent": the centre read's prediction competes
        centre_guess = walk.centre_pred[:, joints].transpose(1, 0, 2)
        scores = np.maximum(scores, score_matrix(centre_guess, walk.window, cands.xy, cands.heat, cands.valid))
        chosen = self._assign(scores, self.keypoint_threshold)  # (J, P)
        jj, pp = np.nonzero(chosen >= 0)
        cc = chosen[jj, pp]
        loc = g.copy()
        loc[jj, pp] = cands.xy[jj, cc]
        # Low confidence: a joint without an accepted peak keeps its prediction, below keypoint_threshold.
        h_at = np.minimum(np.maximum(sample_channels(heat, joints, g), 0.0), self.keypoint_threshold)
        conf = 0.5 * h_at
        conf[jj, pp] = scores[jj, pp, cc]
        walk.pos[:, joints] = loc.transpose(1, 0, 2)
        walk.conf[:, joints] = conf.T


def path_matrix(spec: SkeletonSpec) -> np.ndarray:
    """(E, K) float64: 1 where edge e lies on the path from the root to joint k."""
    path = np.zeros((spec.num_edges, spec.num_joints))
    for k in range(spec.num_joints):
        j = k
        while j != spec.root:
            path[spec.edge_of_child[j], k] = 1.0
            j = spec.parents[j]
    return path


class _Walk:
    """State of one frame's tree walk (cells): P people, K joints, E edges.

    pos, pred: (P, K, 2); conf: (P, K); window: (P,); centre_pred: (P, K, 2) the centre read's predictions
    (the walk's fallback and second hypothesis); at_centre: (P, E, 2) the edge vectors read at the centre
    cell; depth_reads: (P, 1+E) depth of the root and the edges' differences (nan without a depth head).
    """

    def __init__(self, n: int, k: int, e: int) -> None:
        self.pos = np.zeros((n, k, 2))
        self.pred = np.zeros((n, k, 2))
        self.conf = np.zeros((n, k))
        self.window = np.zeros(n)
        self.centre_pred = np.zeros((n, k, 2))
        self.at_centre = np.zeros((n, e, 2))
        self.depth_reads = np.full((n, 1 + e), np.nan)


__all__ = ["TreeDecoder", "DecodedPeople", "path_matrix"]

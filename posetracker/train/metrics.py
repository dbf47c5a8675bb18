"""Temporal and 3-D quality of a model on clips: jitter, lag, PA-MPJPE, bone-length CV, depth order.

Dense track arrays: T frames, N tracks, K joints; nan / False where absent.

- :func:`root_depth_error`: median body-centre depth error (m)
- :func:`jitter`: mean keypoint acceleration ``|x[t+1] - 2 x[t] + x[t-1]|`` (px/frame^2)
  over joints confident in all three frames.
- :func:`lag_frames`: delay (frames) of a trajectory behind a reference, from the peak of
  the cross-correlation of their velocities (whole frames, refined by a parabola); > 0 = behind.
  :func:`evaluate_clip` first gives each left/right pair of the model the teacher's assignment
  (:func:`align_left_right`): on a side view the model and the teacher sometimes label the two
  legs the other way round, and those swaps, not timing, would dominate the velocity correlation
  (on the gait clip 360-380 of 2,160 joint-frames are swapped; the pretrained / distilled model
  read -2.0 / +2.4 frames with them, +0.1 / +0.7 without).
- :func:`pa_mpjpe`: mean joint error (mm) after the best similarity transform (Procrustes).
- :func:`bone_length_cv`: per bone std / mean of its length over a track, averaged.
- :func:`depth_order_agreement`: fraction of left/right joint pairs whose depth order
  matches the reference's (pairs closer than ``min_gap_m`` in the reference are skipped);
  :func:`depth_order_counts` gives the counts behind it (to pool clips), :func:`one_order_counts`
  the best a model scores that keeps one order per pair through a clip.
- :func:`added_lag`: lag of a model's output behind another model's (smoothed) on the same clip.
- :func:`evaluate_clip`: all of them for a TrackingSession on one clip against its labels.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
from scipy.optimize import linear_sum_assignment

from posetracker.analysis.stature import track_statures
from posetracker.skeletons import SkeletonSpec
from posetracker.tracking.mirror import count_swaps, crossed_pairs, mirror_pairs
from posetracker.types import PoseSequence


def jitter(xy: np.ndarray, ok: np.ndarray | None = None) -> float:
    """xy (T, N, K, D), ok (T, N, K) -> mean |second difference| over valid triples (nan if none)."""
    ok = np.isfinite(xy).all(-1) if ok is None else ok & np.isfinite(xy).all(-1)
    if xy.shape[0] < 3:
        return float("nan")
    acc = np.linalg.norm(xy[2:] - 2 * xy[1:-1] + xy[:-2], axis=-1)
    m = ok[2:] & ok[1:-1] & ok[:-2]
    return float(acc[m].mean()) if m.any() else float("nan")


def lag_frames(pred: np.ndarray, ref: np.ndarray, max_lag: int = 5) -> float:
    """Delay of ``pred`` behind ``ref`` in frames. pred, ref: (T, ...) aligned, nan = missing.

    The velocities of ``pred`` on a fixed span (all but ``max_lag`` frames at each end) are
    correlated with those of ``ref`` delayed by whole k in [-max_lag, max_lag]; the fraction comes
    from a parabola through the best k and its neighbours. (Shifting by fractions with linear
    interpolation low-passes one side, which biased noisy tracks towards half-frame lags by up to
    0.4 frames on synthetic tracks; a span that moves with k skews the peak at the clip's ends.)
    """
    vp = np.diff(pred, axis=0).reshape(pred.shape[0] - 1, -1)
    vr = np.diff(ref, axis=0).reshape(ref.shape[0] - 1, -1)
    n = len(vp)
    a = vp[max_lag:n - max_lag]
    ks = np.arange(-max_lag, max_lag + 1)
    c = np.full(len(ks), np.nan)
    for i, k in enumerate(ks):
        b = vr[max_lag - k:n - max_lag - k]
        m = np.isfinite(a) & np.isfinite(b)
        if m.sum() > 10:
            c[i] = (a[m] * b[m]).sum() / np.sqrt((a[m] ** 2).sum() * (b[m] ** 2).sum() + 1e-12)
    if not np.isfinite(c).any():
        return float("nan")
    i = int(np.nanargmax(c))
    frac = 0.0
    if 0 < i < len(ks) - 1 and np.isfinite(c[i - 1]) and np.isfinite(c[i + 1]):
        curve = c[i - 1] - 2 * c[i] + c[i + 1]
        if curve < 0:
            frac = float(np.clip(0.5 * (c[i - 1] - c[i + 1]) / curve, -0.5, 0.5))
    return float(ks[i] + frac)


def align_left_right(pred: np.ndarray, ref: np.ndarray, mirror: tuple[int, ...] | np.ndarray) -> np.ndarray:
    """pred, ref (T, N, K, 2): ``pred`` with each left/right pair swapped on the frames where the swap fits ``ref`` better.

    mirror: (K,) each joint's mirror (itself if none). Comparisons with nan are False (no swap).
    """
    out = pred.copy()
    for i, j in enumerate(mirror):
        if j <= i:
            continue
        d = lambda a, b: np.linalg.norm(pred[..., a, :] - ref[..., b, :], axis=-1)  # noqa: E731
        swap = (d(i, j) + d(j, i) < d(i, i) + d(j, j))[..., None]
        out[..., i, :] = np.where(swap, pred[..., j, :], pred[..., i, :])
        out[..., j, :] = np.where(swap, pred[..., i, :], pred[..., j, :])
    return out


def procrustes_align(pred: np.ndarray, ref: np.ndarray) -> np.ndarray:
    """(K, 3) ``pred`` moved by the similarity transform (scale, rotation, translation) best fitting ``ref``."""
    mp, mr = pred.mean(0), ref.mean(0)
    p, r = pred - mp, ref - mr
    u, s, vt = np.linalg.svd(p.T @ r)
    d = np.sign(np.linalg.det(u @ vt))
    fix = np.diag([1.0, 1.0, d])
    rot = u @ fix @ vt
    scale = (s * np.diag(fix)).sum() / max((p**2).sum(), 1e-12)
    return scale * p @ rot + mr


def pa_mpjpe(pred: np.ndarray, ref: np.ndarray, valid: np.ndarray | None = None, min_joints: int = 4) -> float:
    """pred, ref (M, K, 3) m; valid (M, K) -> mean Procrustes-aligned joint error in mm (nan if no pose)."""
    valid = np.isfinite(pred).all(-1) & np.isfinite(ref).all(-1) & (True if valid is None else valid)
    errs = []
    for p, r, v in zip(pred, ref, valid):
        if v.sum() >= min_joints:
            errs.append(np.linalg.norm(procrustes_align(p[v], r[v]) - r[v], axis=-1).mean())
    return float(np.mean(errs) * 1000) if errs else float("nan")


def real_edges(spec: SkeletonSpec) -> np.ndarray:
    """(E', 2) tree edges between labelled joints (edges to virtual joints such as the centre dropped)."""
    keep = [not (p in spec.virtual or c in spec.virtual) for p, c in spec.edges]
    return spec.edges[np.asarray(keep, bool)]


def bone_length_cv(world: np.ndarray, spec: SkeletonSpec, ok: np.ndarray | None = None, min_frames: int = 5) -> float:
    """world (T, N, K, 3) m, ok (T, N, K) -> mean over tracks and bones of std/mean length (nan if none)."""
    edges = real_edges(spec)
    ok = np.isfinite(world).all(-1) if ok is None else ok & np.isfinite(world).all(-1)
    length = np.linalg.norm(world[:, :, edges[:, 1]] - world[:, :, edges[:, 0]], axis=-1)  # (T, N, E')
    m = ok[:, :, edges[:, 1]] & ok[:, :, edges[:, 0]]
    cvs = []
    for n in range(world.shape[1]):
        for e in range(len(edges)):
            v = length[m[:, n, e], n, e]
            if len(v) >= min_frames and v.mean() > 0:
                cvs.append(v.std() / v.mean())
    return float(np.mean(cvs)) if cvs else float("nan")


def root_depth_error(pred: np.ndarray, ref: np.ndarray, ok: np.ndarray) -> float:
    """Median |pred - ref| (m) of the body-centre depth over matched frames; pred, ref, ok (T, N)."""
    m = ok & np.isfinite(pred) & np.isfinite(ref)
    return float(np.median(np.abs(pred[m] - ref[m]))) if m.any() else float("nan")


def depth_order_counts(pred: np.ndarray, ref: np.ndarray, pairs: np.ndarray, min_gap_m: float = 0.05,
                       keep: np.ndarray | None = None) -> tuple[int, int]:
    """pred, ref (..., K) depths -> (pair-frames with the same sign of z_a - z_b, pair-frames counted).

    pairs: (M, 2); counted = both finite and the reference's two sides >= ``min_gap_m`` apart;
    keep: optional (..., M) bool, the pair-frames to count (e.g. where two references agree)."""
    dp = pred[..., pairs[:, 0]] - pred[..., pairs[:, 1]]
    dr = ref[..., pairs[:, 0]] - ref[..., pairs[:, 1]]
    m = np.isfinite(dp) & np.isfinite(dr) & (np.abs(dr) >= min_gap_m)
    if keep is not None:
        m &= keep
    return int((np.sign(dp[m]) == np.sign(dr[m])).sum()), int(m.sum())


def depth_order_agreement(pred: np.ndarray, ref: np.ndarray, pairs: np.ndarray, min_gap_m: float = 0.05,
                          keep: np.ndarray | None = None) -> float:
    """pred, ref (..., K) depths -> fraction of pairs with the same sign of z_a - z_b (nan if none);
    see :func:`depth_order_counts`."""
    agree, counted = depth_order_counts(pred, ref, pairs, min_gap_m, keep)
    return agree / counted if counted else float("nan")


def one_order_counts(ref: np.ndarray, pairs: np.ndarray, min_gap_m: float = 0.05) -> tuple[int, int]:
    """ref (T, N, K) -> the best :func:`depth_order_counts` of any prediction that keeps one depth
    order per (track, pair) over all T frames (the reference's majority side), and pair-frames counted.

    Far below the count, the clip has real changes of the nearer side; near it, the metric mostly
    tests which way each body is turned."""
    dr = ref[..., pairs[:, 0]] - ref[..., pairs[:, 1]]  # (T, N, M)
    m = np.isfinite(dr) & (np.abs(dr) >= min_gap_m)
    nearer = ((dr > 0) & m).sum(0)  # (N, M)
    return int(np.maximum(nearer, m.sum(0) - nearer).sum()), int(m.sum())


def sequence_tracks(seq: PoseSequence, min_confidence: float = 0.3) -> dict[str, np.ndarray]:
    """A tracked PoseSequence -> dense {"xy" (T, N, K, 2), "depth" (T, N, K), "world" (T, N, K, 3), "ok" (T, N, K)}."""
    ids = seq.track_ids()
    col = {tid: i for i, tid in enumerate(ids)}
    t_len, n, k = len(seq), len(ids), seq.skeleton.num_joints
    out = {"xy": np.full((t_len, n, k, 2), np.nan), "depth": np.full((t_len, n, k), np.nan),
           "world": np.full((t_len, n, k, 3), np.nan), "ok": np.zeros((t_len, n, k), bool)}
    for t, f in enumerate(seq.frames):
        for p, tid in enumerate(f.track_ids.tolist()):
            if tid in col:
                out["xy"][t, col[tid]] = f.keypoints[p, :, :2]
                out["depth"][t, col[tid]] = f.keypoints[p, :, 2]
                if f.world is not None:
                    out["world"][t, col[tid]] = f.world[p]
                out["ok"][t, col[tid]] = f.confidence[p] >= min_confidence
    return out


def match_to_reference(pred_xy: np.ndarray, pred_ok: np.ndarray, ref_xy: np.ndarray, ref_ok: np.ndarray,
                       max_px: float = 50.0) -> np.ndarray:
    """Per frame, the predicted person (index or -1) for each reference track: (T, N_ref) int.

    Hungarian matching on the mean distance over joints valid in both, at most ``max_px``.
    """
    t_len, n_ref = ref_xy.shape[:2]
    out = np.full((t_len, n_ref), -1, np.int64)
    for t in range(t_len):
        d = np.linalg.norm(ref_xy[t][:, None] - pred_xy[t][None], axis=-1)  # (Nr, Np, K)
        both = ref_ok[t][:, None] & pred_ok[t][None]
        cost = np.where(both.sum(-1) > 0, np.where(both, d, 0).sum(-1) / np.maximum(both.sum(-1), 1), np.inf)
        if not np.isfinite(cost).any():
            continue
        r, c = linear_sum_assignment(np.where(np.isfinite(cost), cost, 1e9))
        good = cost[r, c] <= max_px
        out[t, r[good]] = c[good]
    return out


def _gather(arr: np.ndarray, match: np.ndarray) -> np.ndarray:
    """arr (T, Np, ...) -> (T, Nr, ...) by match (T, Nr); nan / False where unmatched."""
    blank = np.full((arr.shape[0], 1, *arr.shape[2:]), np.nan if arr.dtype.kind == "f" else 0, arr.dtype)
    pad = np.concatenate([arr, blank], 1)  # the unmatched column, also where the model tracked no one (Np = 0)
    return np.take_along_axis(pad, np.where(match < 0, arr.shape[1], match).reshape(*match.shape, *[1] * (arr.ndim - 2)), 1)


def run_clip(session, clip_path: str | Path, labels) -> dict[str, np.ndarray]:
    """Run ``session`` (a TrackingSession, live or offline) over the labelled frames of a clip.

    labels: :class:`posetracker.train.clip_labels.ClipLabels` of the unaugmented clip (source pixels).
    Returns the model's own tracks (:func:`sequence_tracks`: ``xy``, ``ok``, ``depth``, ``world``,
    (T, N, ...)), the same gathered onto the label tracks (``matched_xy`` ... (T, N_ref, ...)),
    ``match`` (the model track of each label track, -1 none) and ``frames`` (frames run).
    """
    from posetracker.capture import VideoFileSource

    keep = set(labels.frame_ids.tolist())
    with VideoFileSource(clip_path) as src:
        seq = session.run((f for f in src if f.index in keep), fps=src.fps)
    pred = sequence_tracks(seq)
    match = match_to_reference(pred["xy"], pred["ok"], labels.xy, labels.visible)
    out = dict(pred)
    out.update({f"matched_{k}": _gather(v, match) for k, v in pred.items()})
    out["match"], out["frames"] = match, np.array(len(seq))
    return out


def added_lag(run: dict[str, np.ndarray], baseline: dict[str, np.ndarray], labels, spec: SkeletonSpec) -> float:
    """Frames by which a model's output trails a baseline model's (both :func:`run_clip` results).

    The baseline's tracks are Savitzky-Golay smoothed like the teacher's (zero lag, 0.35 s), so its
    jitter does not bias the estimate; both sides come from the same decoder, so unlike the lag
    behind the teacher, a different opinion about a joint does not read as delay.
    """
    from posetracker.tracking.one_euro import smooth_offline

    both = run["matched_ok"] & baseline["matched_ok"]
    base = smooth_offline(np.where(both[..., None], baseline["matched_xy"], np.nan), labels.timestamps)
    base = np.where(both[..., None], base, np.nan)
    pred = np.where(both[..., None], run["matched_xy"], np.nan)
    return lag_frames(align_left_right(pred, base, spec.mirror_index), base)


def evaluate_clip(session, clip_path: str | Path, labels, spec: SkeletonSpec | None = None,
                  baseline: dict[str, np.ndarray] | None = None) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    """Run ``session`` over a labelled clip and compare it to ``labels`` -> (metrics, :func:`run_clip` result).

    Metrics: jitter (model, teacher raw, teacher smoothed), ``jitter_seen`` (the model's jitter over the
    joints the teacher sees, whatever the model's confidence there, and ``jitter_teacher_seen``, the smoothed
    teacher's over the same joints: one joint set for every model and refiner on a clip, where ``jitter``
    counts only the joints the model is sure of, so a stage that makes hard joints confident adds their
    real motion to it), lag vs the smoothed teacher, PCK@0.1 vs
    the smoothed teacher (box diagonal), PA-MPJPE, root-depth error and depth-order agreement vs the
    teacher world / depth (when it has them), the model's bone-length CV, left/right consistency
    (``swaps_per_1000``: frames where a track's mirror pair sits crossed against its frame before, per
    1,000 person-frames; ``lr_crossed``: share of pairs crossed against the teacher;
    ``swaps_vs_teacher_per_1000``: frames where a pair turns crossed against the teacher's reading of the same
    frame, per 1,000 matched person-frames: a fast real crossing of two limbs, which the frame-to-frame count
    takes for a swap when it happens within one frame, is not one here), ``stature_m`` (the
    standing height of the person with the most complete frames, :mod:`posetracker.analysis.stature`:
    the check on metric scale; ``stature_teacher_m`` the same from the teacher's world), and with ``baseline``
    (another model's :func:`run_clip` on the same clip) :func:`added_lag`.
    """
    spec = spec or session.spec
    r = run_clip(session, clip_path, labels)
    ref_ok = labels.visible
    m = {k: r[f"matched_{k}"] for k in ("xy", "ok", "depth", "world")}
    both = m["ok"] & ref_ok
    ref_xy = np.where(both[..., None], labels.xy, np.nan)
    lag = lag_frames(align_left_right(np.where(both[..., None], m["xy"], np.nan), ref_xy, spec.mirror_index), ref_xy)
    out = {
        "frames": int(r["frames"]), "jitter": jitter(r["xy"], r["ok"]),
        "jitter_teacher_raw": jitter(labels.raw_xy, ref_ok), "jitter_teacher": jitter(labels.xy, ref_ok),
        "jitter_seen": jitter(m["xy"], ref_ok), "jitter_teacher_seen": jitter(labels.xy, ref_ok & np.isfinite(m["xy"]).all(-1)),
        "lag_frames": lag, "pck@0.1": _pck(m["xy"], labels.xy, both, ref_ok),
        "pa_mpjpe_mm": pa_mpjpe(m["world"].reshape(-1, spec.num_joints, 3), labels.world.reshape(-1, spec.num_joints, 3),
                                both.reshape(-1, spec.num_joints) & ~_virtual_mask(spec)),
        "bone_cv": bone_length_cv(r["world"], spec, r["ok"]),
        "root_depth_err_m": root_depth_error(m["depth"][..., spec.root], labels.depth[..., spec.root], both[..., spec.root]),
        "depth_order": depth_order_agreement(np.where(both, m["depth"], np.nan), labels.depth, mirror_pairs(spec)),
        "matched_fraction": float((r["match"] >= 0)[labels.present()].mean()) if labels.present().any() else float("nan"),
    }
    pairs = mirror_pairs(spec)
    swaps, person_frames = count_swaps(r["xy"], r["ok"], pairs)
    out["swaps_per_1000"] = 1000.0 * swaps / person_frames if person_frames else float("nan")
    crossed, compared = crossed_against(m["xy"], both, labels.xy, ref_ok, pairs)
    out["lr_crossed"] = crossed_share(crossed, compared)
    matched_frames = int(both.any(-1).sum())
    out["swaps_vs_teacher_per_1000"] = (1000.0 * crossed_onsets(crossed, compared) / matched_frames
                                        if matched_frames else float("nan"))
    statures = [(n, h) for n, h in track_statures(r["world"], r["ok"], spec) if np.isfinite(h)]
    out["stature_m"] = max(statures)[1] if statures else float("nan")  # the longest-seen person's
    ref = [(n, h) for n, h in track_statures(labels.world, labels.visible, spec) if np.isfinite(h)]
    out["stature_teacher_m"] = max(ref)[1] if ref else float("nan")  # BlazePose GHUM's metric size
    if baseline is not None:
        out["added_lag_frames"] = added_lag(r, baseline, labels, spec)
    return out, r


def crossed_against(pred: np.ndarray, pred_ok: np.ndarray, ref: np.ndarray, ref_ok: np.ndarray,
                    pairs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each (frame, person, mirror pair) against the reference of the same frame: ``(crossed, compared)``,
    (T, N, M) bool each; crossed as ``tracking.mirror.crossed_pairs`` says, compared where both joints are in
    both. pred, ref: (T, N, K, 2); pred_ok, ref_ok: (T, N, K); pairs (M, 2)."""
    t, n, k = pred_ok.shape
    flat = lambda a: a.reshape(t * n, k, *a.shape[3:])  # noqa: E731
    ok_p, ok_r = flat(pred_ok), flat(ref_ok)
    crossed = crossed_pairs(np.nan_to_num(flat(pred)), ok_p, np.nan_to_num(flat(ref)), ok_r, pairs)
    a, b = pairs[:, 0], pairs[:, 1]
    compared = ok_p[:, a] & ok_p[:, b] & ok_r[:, a] & ok_r[:, b]
    return crossed.reshape(t, n, -1), compared.reshape(t, n, -1)


def crossed_share(crossed: np.ndarray, compared: np.ndarray) -> float:
    """Share of the compared (frame, person, mirror pair) that sit crossed against the reference: left and
    right the other way round from the teacher. crossed, compared: :func:`crossed_against`."""
    return float(crossed[compared].mean()) if compared.any() else float("nan")


def crossed_onsets(crossed: np.ndarray, compared: np.ndarray) -> int:
    """Frames (t, n) where at least one mirror pair sits crossed against the reference of frame t having not
    been crossed, and compared, at t - 1. crossed, compared: :func:`crossed_against`."""
    turned = crossed[1:] & compared[:-1] & ~crossed[:-1]  # (T-1, N, M)
    return int(turned.any(-1).sum())


def _virtual_mask(spec: SkeletonSpec) -> np.ndarray:
    v = np.zeros(spec.num_joints, bool)
    v[list(spec.virtual)] = True
    return v


def _pck(pred: np.ndarray, ref: np.ndarray, both: np.ndarray, ref_ok: np.ndarray, alpha: float = 0.1) -> float:
    """Fraction of reference-visible joints within alpha x the reference box diagonal (unmatched = miss)."""
    lo = np.where(ref_ok[..., None], ref, np.inf).min(2)
    hi = np.where(ref_ok[..., None], ref, -np.inf).max(2)
    diag = np.linalg.norm(hi - lo, axis=-1)  # (T, N)
    d = np.linalg.norm(pred - ref, axis=-1)
    hit = both & (d <= alpha * diag[..., None])
    return float(hit[ref_ok].mean()) if ref_ok.any() else float("nan")

"""TrackingSession: the whole chain from frames to tracked, smoothed 3-D people.

    Frame (H, W, 3) uint8 RGB -> [dark frames stretched: model.low_light]
          -> letterbox (256 on the long side, fitted to the aspect) -> PoseNet (causal stream, or bidirectional chunks)
          -> outputs of one frame, (C, h, w) each: heatmaps K, offsets 2K, vectors 2E, depth 1+E
          -> [refiners, maps stage: method B] -> TreeDecoder (method A steps 4-8, 2-D)
          -> DecodedPeople: keypoints (P, K, 2) input px, confidence (P, K), depth_reads (P, 1+E)
          -> [refiners, people stage: method C] -> keypoints in source pixels (P, K, 2)
          -> [still images: the same for overlapping tiles of the frame, their new (small) people added]
          -> [top-down skeletons: each person read again from a crop of the full-resolution frame]
          -> [refiners, frame stage: the precision stage on crops of the source frame]
          -> DepthEstimator.estimate (step 9, ``posetracker.depth``): joint depths (P, K), world (P, K, 3)
          -> PoseTracker (ids) -> DepthEstimator.blend_tracks (far people)
          -> offline: the motion solve over each whole track (``motion.solve``); live: people seen from behind
             labelled by their facing (``motion.live_sides``), each reading weighed against the track's motion
             (``motion.live_solve``), then One Euro smoothing
          -> offline: the legs exchanged back where the feet's left / right labels swap, solved again (``motion.sides``)
          -> bone lengths -> PoseFrame (keypoints (P, K, 3): x, y px and depth m)

Where each step lives: the letterbox (``_prepare``), the network's outputs decoded through the maps- and
people-stage refiners (``_decode``), the tracking (``_track``) and the live smoothing and bone lengths
(``_post_live``) are here; the rest of one frame's people, from the decoded whole frame to depths and world
(tiles, top-down crops, the frame stage, one skeleton per person, its probability, ``_people``), is the mixin
``posetracker.frame_people.FramePeople``; the offline driver (bidirectional chunks, then ids backfilled and the
motion solve per whole track) is ``posetracker.offline_run``, the live ones ``posetracker.pipeline_live``.

The CLI, the tests and the GUI worker all use this class and nothing below it.

Modes:
- ``live``: one frame in, one PoseFrame out (``step``), delayed by
  ``lookahead`` frames; forward GRU state carried; readings weighed against each track's motion, then One
  Euro smoothing (``motion.live_solve``).
  ``step`` is ``prepare``, ``infer`` (the network) and ``finish`` (the rest);
  ``run`` overlaps them on two threads (``posetracker.pipeline_live``).
- ``offline``: whole sources (``run``) in bidirectional chunks of ``chunk``
  frames, each seeing ``overlap`` further frames backwards in time
  (``posetracker.offline_run``); after tracking, the motion solve per track
  (``motion.solve``: robust to wrong readings, zero-lag).
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import replace
from pathlib import Path

import numpy as np
import torch

from posetracker.decoding import DecodedPeople, TreeDecoder
from posetracker.decoding.duplicates import suppress_duplicates
from posetracker.second_look import crop_refiners, load_crop_model
from posetracker.depth import DepthEstimator, PosePrior, PosePriorError, default_prior_path, has_torso, load_pose_prior
from posetracker.frame_people import FramePeople
from posetracker.model.fused import live_stream, torch_parts
from posetracker.model.heads_at_cells import CellHeads, dense_maps
from posetracker.model.network import CausalStream, PoseNet
from posetracker.model.low_light import brighten_if_dark
from posetracker.model.preprocess import INPUT_SIZE, Letterbox, letterbox, to_tensor
from posetracker.model.runtime import accelerate
from posetracker.motion.live_solve import LiveSolve
from posetracker.motion.live_sides import LiveSides
from posetracker.offline_run import run_offline
from posetracker.pipeline_live import Inferred, Pending, Prepared, Progress, StageTimes, poses as live_stages
from posetracker.pipeline_live import limit_blas_threads
from posetracker.pipeline_live import torch_threads as _threads
from posetracker.refiners import RefinerChain, default_refiners, load_chain
from posetracker.session_config import (  # noqa: F401 (re-exported)
    LIVE_CENTRE_EVERY, LIVE_CROP_ROUNDS, LIVE_CROP_TURNS, TILE_GRID, DepthSettings, Mode, MotionSettings, NetworkSettings, PeopleSettings, RefineSettings,
    SessionConfig, top_down_reading,
)
from posetracker.skeletons import SkeletonSpec
from posetracker.tracked_crops import tracked_crops_for
from posetracker.tracking import BoneLengthSolver, PoseSmoother, PoseTracker, joint_sigmas
from posetracker.tracking.mirror import same_sides
from posetracker.tracking.offline import backfill_ids, drop_unsure_tracks
from posetracker.types import Frame, PoseFrame, PoseSequence

LIVE_BONE_WINDOW = 900  # live: frames of each track's bone-length median (30 s at 30 fps; grows from the start)


class TrackingSession(FramePeople):
    """Frames in, tracked PoseFrames out. See the module docstring."""

    def __init__(self, net: PoseNet, config: SessionConfig | None = None, refiners_dir: str | Path | None = None):
        """A session around a network already in memory (tests, teachers); from a weights file use :meth:`open`.
        The refiners named in ``config.refine.refiners`` are read from ``refiners_dir`` (None: the shipped models)."""
        self.net = net.eval()
        self.spec = net.spec
        self.config = config or SessionConfig()
        limit_blas_threads(self.config.network.threads)
        self.notices: list[str] = []  # problems that do not stop tracking (for the app to show)
        kinds = self.config.refine.refiners
        if kinds is None:
            kinds = default_refiners(self.spec, self.config.mode, refiners_dir)
            if missing := [k for k in default_refiners(self.spec, self.config.mode) if k not in kinds]:
                self.notices.append(f"{self.config.mode} mode runs without its default refiner(s) {', '.join(missing)}: "
                                    f"no {self.spec.name} weights for them beside the model in {refiners_dir} "
                                    f"(copy them there from the shipped models, or name refiners to use)")
        own = {"crop": self.config.refine.crop_weights} if self.config.refine.crop_weights else None
        self.refiners: RefinerChain = load_chain(list(kinds), self.spec, refiners_dir, own)
        self.refiners.check_budgets(net)
        if self.config.network.runtime == "auto":
            self.refiners.accelerate(self.config.network.threads)
        self.runtime = accelerate(net, self.config.network.threads) if self.config.network.runtime == "auto" else "torch"
        self.depth_trained = "depth" in getattr(net, "meta", {}).get("trained", "")
        prior = self._load_pose_prior() if self.depth_trained and self.config.depth.pose_prior else None
        self.depth = DepthEstimator(self.spec, self.config.depth.fov_deg, self.depth_trained, prior, self.config.depth.far_depth)
        decoder_settings = dict(self.spec.decoder)  # the skeleton's, then the session's own choices
        if self.config.people.vote_radius is not None:
            decoder_settings["vote_radius"] = self.config.people.vote_radius
        self.decoder = TreeDecoder(
            self.spec, stride=net.stride,
            score_threshold=self.config.people.score_threshold,
            max_people=self._centres_wanted(),
            min_people=min(self.config.people.known_count or 0, self._centres_wanted()), **decoder_settings,
        )
        self.sigmas = joint_sigmas(self.spec)
        # top-down with a crop model of its own (the skeleton's top_down.crop_weights, beside the weights)
        self.crop_model = load_crop_model(self.spec, refiners_dir, self.decoder, self.sigmas)
        crop_refiners(self)  # its refiners (methods B, C) read its crops' maps: its reading is the animals' joints
        if self.crop_model is not None and self.config.network.runtime == "auto":  # the crops' batch in ONNX Runtime
            self.crop_model.accelerate(self.config.network.threads,  # live: its 8-bit body where it ships
                                       int8=self.config.network.int8 and self.config.mode == "live")
        self.crop_reading, self.centre_every = top_down_reading(  # top-down: how each animal's crop is read
            self.spec, self.config.refine, self.config.mode)
        self.tracked_crops = tracked_crops_for(self)  # live top-down: crops where the last frame had the animals
        tiles = self.config.refine.tile_grid
        self.tile_grid = tiles if tiles is not None else TILE_GRID[self.config.mode]  # video
        # process_image; tiles were measured on people (an animal mode reads small animals top-down instead)
        self.image_tile_grid = tiles if tiles is not None else TILE_GRID["image"] if self.spec.kind == "human" else 1
        self.times = StageTimes()
        self._cell_heads: CellHeads | None = None  # live: made at the first frame
        self.reset()

    def _load_pose_prior(self) -> PosePrior | None:
        """The shipped pose prior of this skeleton, if there is one; an unreadable one leaves depth to the
        depth head alone, with a notice (tracking does not depend on it)."""
        path = default_prior_path(self.spec.name)
        if not (path.is_file() and has_torso(self.spec)):
            return None
        try:
            return load_pose_prior(path, self.spec)
        except PosePriorError as exc:
            self.notices.append(f"Pose prior not used (joint depths from the depth head alone): {exc}")
            return None

    @classmethod
    def open(cls, skeleton: str | SkeletonSpec | None = None, weights: str | Path | None = None,
             config: SessionConfig | None = None) -> TrackingSession:
        """The one way to build a session from files: the network from ``weights`` (default: the shipped model
        of ``skeleton``, human18 when neither is given) and the refiners named in ``config.refine.refiners``, read
        beside ``weights`` (default: the shipped ones). Raises WeightsError / RefinerError for a missing or
        unfitting file."""
        from posetracker.model.weights import load_posenet
        from posetracker.skeletons import load_skeleton

        spec = load_skeleton(skeleton) if isinstance(skeleton, str) else skeleton
        return cls(load_posenet(weights, spec), config, Path(weights).parent if weights else None)

    @property
    def description(self) -> str:
        """What runs, in words, for the app's model line (e.g. "pose network, live, 8-bit, look-ahead 1 frame")."""
        cfg = self.config
        if cfg.mode != "live":
            return "pose network, offline (whole file, both directions)"
        bits = "8-bit" if getattr(getattr(self, "stream", None), "int8", False) else "float"
        n = cfg.network.lookahead
        ahead = f"look-ahead {n} frame{'s' if n != 1 else ''}" if n else "no look-ahead"
        return f"pose network, live, {bits}, {ahead}"

    def reset(self, keep_ids: bool = False) -> None:
        """Forget every track, filter and temporal state (e.g. after a seek or a new source). ``keep_ids``:
        the same source goes on elsewhere (a seek, a loop): new tracks get ids after the ones handed out so
        far, so no id names two people within one recording."""
        first_id = self.tracker.ids_handed_out if keep_ids and hasattr(self, "tracker") else 0
        mode = self.config.mode
        if getattr(self, "stream", None) is None:  # live: backbone, temporal step and heads as one runtime call
            network = self.config.network
            self.stream = live_stream(self.net, network.lookahead, network.threads, network.int8, sparse=True) \
                if mode == "live" \
                else CausalStream(self.net, network.lookahead)
        self.stream.reset()
        self._pending: deque[Pending] = deque()
        self.whole_track_report: dict = {}  # offline: what motion.whole_track changed (the metadata's entries)
        # one subject (max people 1): every detection within a body's reach continues its track, so it keeps one id
        tracker = PoseTracker.one_subject if self.config.people.max_people == 1 else PoseTracker
        self.tracker = tracker(self.spec, fix_swaps=self.config.motion.fix_swaps)
        self.tracker.reset(first_id)
        self.smoother = LiveSolve(PoseSmoother(self.spec, mode)) if mode == "live" else PoseSmoother(self.spec, mode)
        self.sides = LiveSides(self.spec)  # live: people seen from behind, left and right by their facing
        self.bones = BoneLengthSolver(self.spec, rigidify=self.config.motion.rigid_bones, window=LIVE_BONE_WINDOW)
        self.depth.reset()
        self.refiners.reset()
        self._bottom_up: dict[int, tuple[np.ndarray, np.ndarray]] = {}  # frame index -> joints before the crop stage
        self._sure_tracks: set[int] = set()  # live: tracks read as a likely person at least once (_shown)
        self._last_roots: np.ndarray | None = None  # top-down: the last frame's animals' roots (P, 2) px (with_missing)
        if self.tracked_crops is not None:  # and the last frame's animals (_last_people) forgotten
            self.tracked_crops.reset()

    def _track(self, pose: PoseFrame) -> PoseFrame:
        """Ids, then (trained depth head) far people's depth blended with their body scale. Where the
        precision stage changed the joints, people are linked over time by their bottom-up joints (smooth
        through the temporal stage; a crop's reading of a crowd is not) and keep the refined ones."""
        bottom_up = self._bottom_up.pop(pose.index, None)
        if bottom_up is None:
            return self.depth.blend_tracks(self.tracker.update(pose))
        xy, confidence = bottom_up
        linked = self.tracker.update(replace(
            pose, keypoints=np.concatenate([xy, pose.keypoints[..., 2:]], -1).astype(np.float32),
            confidence=confidence.astype(np.float32)))
        out = replace(pose, track_ids=linked.track_ids)
        if self.config.motion.fix_swaps and self.config.mode == "offline":  # the refined sides follow the track's
            out = same_sides(out, linked, self.tracker.pairs)  # (offline: the hand-counted heel strikes agree)
        return self.depth.blend_tracks(out)

    def _centres_wanted(self) -> int:
        """Most people the whole-frame decoder looks for: Max people, or with a known number of animals in a
        top-down mode twice that, the crops keeping the surest (``decoding.top_down``)."""
        if self.config.people.known_count and self.spec.top_down:
            return 2 * self.config.people.known_count
        return self.config.people.max_people

    # ------------------------------------------------------------------ frames

    def _input(self, rgb: np.ndarray) -> tuple[torch.Tensor, Letterbox]:
        """(H, W, 3) uint8 RGB -> the network input (1, 3, h, w) float 0..255 and its letterbox."""
        img, box = letterbox(rgb, INPUT_SIZE, fit=self.config.network.fit_input and not self.refiners.needs_image)
        return to_tensor(img)[None], box

    def _prepare(self, frame: Frame, tiles: int | None = None) -> tuple[torch.Tensor, Pending]:
        """tiles: the tile grid for this frame (None: the video one, ``self.tile_grid``)."""
        tiles = self.tile_grid if tiles is None else tiles
        image = brighten_if_dark(frame.image) if self.config.network.low_light else frame.image
        x, box = self._input(image)
        return x, Pending(frame.index, frame.timestamp, box, x if self.refiners.needs_image else None,
                           image if self.refiners.needs_frame or tiles > 1 or self.spec.top_down else None,
                           tiles)

    def _decode(self, maps: dict[str, torch.Tensor], image: torch.Tensor | None) -> DecodedPeople:
        """Heads' outputs of one frame ((1, C, h, w) each) -> its people in input pixels, through the maps-
        and people-stage refiners (methods B and C), duplicates dropped."""
        sparse = "head_features" in maps  # live: the offset, vector and depth heads at the cells decoding reads
        if sparse and self.refiners.needs_maps:  # maps- and people-stage refiners take whole maps
            features = maps["head_features"]
            maps = {k: v for k, v in maps.items() if k != "head_features"} | dense_maps(torch_parts(self.net)[3], features)
            sparse = False
        if self.refiners:
            with _threads(self.config.network.threads):
                maps = self.refiners.refine_maps(maps, image)
        arrays = {k: maps[k][0].numpy() for k in ("heatmaps", "offsets", "vectors", "depth") if k in maps}
        if sparse:
            self._cell_heads = self._cell_heads or CellHeads(torch_parts(self.net)[3])
            arrays.update(self._cell_heads.maps(maps["head_features"][0].numpy()))
        people = suppress_duplicates(self.decoder.decode(arrays), self.sigmas)
        if self.refiners:
            with _threads(self.config.network.threads):
                people = self.refiners.refine_people(people, maps, self.net.stride)
        return people

    def _shown(self, pose: PoseFrame) -> PoseFrame:
        """Live: the people of tracks read as a likely person (probability >= ``min_person_probability``) in some
        frame so far, and untracked ones that are now; the others stay in the tracker, unseen (offline, whole
        tracks are judged at the end: ``tracking.offline.drop_unsure_tracks``)."""
        if self.spec.score_calibration is None or pose.num_people == 0:
            return pose
        sure = pose.scores >= self.config.people.min_person_probability
        ids = pose.track_ids.tolist()
        self._sure_tracks.update(t for t, s in zip(ids, sure.tolist()) if s and t >= 0)
        keep = sure | np.array([t in self._sure_tracks for t in ids])
        return pose if keep.all() else pose.select(keep)

    def _post_live(self, pose: PoseFrame, network_ms: float) -> PoseFrame:
        t0 = time.perf_counter()
        if self.config.people.track:
            pose = self._shown(self._track(pose))
            if self.config.motion.fix_facing:
                pose = self.sides.update(pose)
            if self.config.motion.smoothing:
                pose = self.smoother.update(pose)
            pose = self.bones.update(pose)
        self.times.track_ms = (time.perf_counter() - t0) * 1000
        self.times.history.append((network_ms, self.times.decode_ms, self.times.track_ms))
        return pose

    def prepare(self, frame: Frame) -> Prepared:
        """Live, stage 1a (pure: any thread): letterbox one frame for :meth:`infer`."""
        t0 = time.perf_counter()
        with torch.inference_mode():
            x, meta = self._prepare(frame)
        return Prepared(x, meta, (time.perf_counter() - t0) * 1000)

    def infer(self, prepared: Prepared) -> Inferred | None:
        """Live, stage 1b: push a prepared frame through the network; the outputs of the frame ``lookahead``
        pushes ago (None while the look-ahead fills). The only stage with the network's state."""
        if self.tracked_crops is not None:  # the centre model as a still, on its frames only (tracked_crops)
            return self.tracked_crops.infer(prepared)
        t0 = time.perf_counter()
        with torch.inference_mode(), _threads(self.config.network.threads):
            self._pending.append(prepared.meta)
            out = self.stream.push(prepared.x)
        self.times.network_ms = prepared.ms + (time.perf_counter() - t0) * 1000
        return None if out is None else Inferred(out, self._pending.popleft(), self.times.network_ms)

    def infer_flush(self) -> list[Inferred]:
        """Live, stage 1 at the end of a stream: the outputs the look-ahead still holds back."""
        with torch.inference_mode(), _threads(self.config.network.threads):
            outs = self.stream.flush()
        return [Inferred(o, self._pending.popleft(), self.times.network_ms) for o in outs]

    def finish(self, item: Inferred) -> PoseFrame:
        """Live, stage 2: people, 3-D, ids, smoothing and bone lengths of an inferred frame. Frames must come
        in their order, one at a time (the tracker's, smoother's and depth's state); any thread."""
        read = self._people if self.tracked_crops is None else self.tracked_crops.people  # (out, meta, budget)
        return self._post_live(read(item.out, item.meta, self.config.refine.crop_budget_ms), item.network_ms)

    def step(self, frame: Frame) -> PoseFrame | None:
        """Live mode: push one frame; returns the PoseFrame of the frame ``lookahead`` frames
        ago (None while the look-ahead fills). The three stages in a row (``pipeline_live``)."""
        item = self.infer(self.prepare(frame))
        return None if item is None else self.finish(item)

    def flush(self) -> list[PoseFrame]:
        """Live mode: the PoseFrames still held back by the look-ahead at the end of a stream."""
        return [self.finish(item) for item in self.infer_flush()]

    def process_image(self, rgb: np.ndarray) -> PoseFrame:
        """One still image (H, W, 3) uint8 RGB -> untracked PoseFrame (no temporal context)."""
        frame = Frame(0, 0.0, rgb)
        with torch.inference_mode(), _threads(self.config.network.threads):
            x, meta = self._prepare(frame, self.image_tile_grid)
            out = self.net(x[:, None])
        return self._people(out, meta, tracked=False)

    # ----------------------------------------------------------------- sources

    def run(self, frames: Iterable[Frame], fps: float, total: int | None = None,
            progress: Progress | None = None, cancel: Callable[[], bool] | None = None,
            metadata: dict | None = None) -> PoseSequence:
        """Process a whole source; returns every frame's PoseFrame in order.

        frames: the source's frames; fps: its nominal rate; total: frame count
        for progress (or None); ``cancel()`` returning True stops early and
        returns what was processed so far. If the source fails part-way (a
        file corrupt in the middle, a camera unplugged), the frames read
        before the failure are still processed and returned, and
        ``metadata["incomplete"]`` says where and why it stopped; images of a
        folder that cannot be read are skipped and listed in ``metadata["skipped"]``. People shown
        with id -1 before their track was confirmed take its id
        (``tracking.offline.backfill_ids``), which a live stream cannot do; people
        still at id -1 then (detections never confirmed as a track, such as a
        table taken for a person in one frame) are left out unless
        ``config.people.keep_unconfirmed``, and so are tracks never read as a likely person
        (``tracking.offline.drop_unsure_tracks``; their ids in ``metadata["unsure_tracks"]``).
        """
        self.reset()
        failure: list[str] = []

        def guarded() -> Iterable[Frame]:
            from posetracker.capture import CaptureError

            try:
                yield from frames
            except CaptureError as exc:
                failure.append(str(exc))

        if self.config.mode == "live":
            poses = list(live_stages(self, guarded(), total, progress, cancel))
            if self.config.people.track:  # the whole source is at hand: ids for the frames before a track's confirmation
                poses = backfill_ids(poses, self.sigmas)
        else:
            poses = self._run_offline(guarded(), total, progress, cancel, fps)
        unsure: list[int] = []
        if self.config.people.track and not self.config.people.keep_unconfirmed:
            poses = [p.select(p.track_ids >= 0) for p in poses]
            if self.spec.score_calibration is not None:  # scores are probabilities: tracks never likely a person go
                poses, unsure = drop_unsure_tracks(poses, self.config.people.min_person_probability)
        meta = {"mode": self.config.mode, "skeleton": self.spec.name, **(metadata or {})}
        if unsure:
            meta["unsure_tracks"] = unsure  # ids left out: never read as a likely person (tracking.offline)
        if not self.config.motion.rigid_bones:
            meta["bones"] = "raw"  # the lengths as estimated; exports keep them (tracking.bones.settle_bones)
        if not self.config.motion.smoothing:
            meta["motion"] = "as read"  # no motion solve: the readings themselves (process --raw)
        meta.update(self.whole_track_report)
        if failure:
            meta["incomplete"] = failure[0]
        if getattr(frames, "skipped", None):  # unreadable images of a folder, skipped (capture.FrameSource)
            meta["skipped"] = list(frames.skipped)
        return PoseSequence(poses, fps=fps if fps > 0 else 30.0, skeleton=self.spec, metadata=meta)

    def _run_offline(self, frames, total, progress, cancel, fps: float = 30.0) -> list[PoseFrame]:
        """Offline: the whole source in bidirectional chunks, tracked and solved (``posetracker.offline_run``)."""
        return run_offline(self, frames, total, progress, cancel, fps)

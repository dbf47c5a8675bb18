"""SessionConfig: the parameters of a ``TrackingSession`` (``posetracker.session``), all with working defaults."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from posetracker.defaults import DEFAULT_LOOKAHEAD, DEFAULT_MAX_PEOPLE

Mode = Literal["live", "offline"]
# SessionConfig.tile_grid when None: still images get 2 x 2 tiles; video not (on a one-person clip offline 12.7 ->
# 5.1 fps with them, the precision stage on; docs/experiments/tiles-and-crowds.md)
TILE_GRID = {"image": 2, "offline": 1, "live": 1}


LIVE_CROP_TURNS = 2  # live: at most this many turned reads of an animal's crop (SessionConfig.crop_turns)


@dataclass(frozen=True)
class SessionConfig:
    """Parameters of a TrackingSession (all have working defaults)."""

    mode: Mode = "live"
    lookahead: int = DEFAULT_LOOKAHEAD  # live: frames of look-ahead for the backward GRU (latency = lookahead / fps)
    chunk: int = 16  # offline: frames emitted per bidirectional pass
    overlap: int = 8  # offline: extra frames the backward GRU sees past each chunk
    max_people: int = DEFAULT_MAX_PEOPLE
    score_threshold: float = 0.15  # minimum centre-heatmap peak for a person
    # still images and untracked frames: people whose final score (calibrated: the probability of a real person,
    # decoding.person_scores) is under it are not output, one skeleton per real person (labelled photos: 119 -> 63
    # skeletons for 48 people, recall kept; 0.05 loses one). Tracked video keeps them for the tracker (the street
    # crowd: a clearly visible man the precision stage reads badly for a few frames scores 0.04 there, and dropping
    # him split his track); run() then leaves out the tracks scoring under it in 90 % of their frames
    # (tracking.offline.drop_unsure_tracks). A skeleton without score_calibration outputs everyone the decoder keeps.
    min_person_probability: float = 0.02
    # cells around a keypoint peak whose offsets vote for its position (decoding.peaks.vote_offsets); None: the
    # decoder's default (tree.VOTE_RADIUS, or the skeleton's decoder setting); 0: the peak cell's offset alone
    vote_radius: int | None = None
    fov_deg: float = 60.0  # field of view of the source camera across the long side of the frame
    smoothing: bool = True
    far_depth: bool = True  # trained depth head: blend body scale into the depth of people beyond its range
    pose_prior: bool = True  # trained depth head: mix its joint depths with the shipped pose prior's (depth.pose_prior)
    rigid_bones: bool = True  # world: one length per bone and track (offline: over the recording; live: running median)
    track: bool = True
    fix_swaps: bool = True  # tracker: swap back left/right pairs read crossed against the track (tracking.mirror)
    # exactly this many animals: that many readings kept a frame; offline, track fragments joined into that many ids
    known_count: int | None = None
    fix_facing: bool = True  # offline: exchange the whole body's left/right where the labels slid over (tracking.facing)
    # offline: side views, exchange knees and ankles read on the other leg (tracking.near_leg), and the whole legs
    # from where the feet's left / right labels swap (motion.sides; a live result gets the latter when finished)
    fix_legs: bool = True
    keep_unconfirmed: bool = False  # run(): keep people never confirmed as a track (id -1; e.g. a one-frame false positive)
    threads: int = 1  # threads for inference
    runtime: Literal["auto", "torch"] = "auto"  # auto: the backbone runs in ONNX Runtime when installed
    int8: bool = True  # live, ONNX Runtime: the 8-bit backbone body where its companion ships (model/int8.py)
    # letterbox into a canvas fitted to the frame's aspect (256 x 160 for 16:9), not 256 x 256; a refiner that reads
    # the network's input image (method B's heatmap refiner, trained on squares) keeps the square
    fit_input: bool = True
    # frames too dark for the network (its brightest pixels under 32 of 255) are stretched first (model.low_light)
    low_light: bool = True
    # refiners to switch on ("heatmap": method B, "graph": method C, "crop": the precision stage); None: the mode's
    # defaults (refiners.default_refiners: offline and still images the precision stage, live its fast variant where
    # more than one CPU is usable), where trained
    refiners: tuple[str, ...] | None = None
    # live: per-frame time for the precision stage (at least one person a frame: one Lightning crop on a 2-core
    # laptop-class CPU); offline: every person, every frame
    crop_budget_ms: float = 10.0
    # small people: the frame also read as tile_grid x tile_grid overlapping tiles (decoding.tiles), their new
    # people added; None: TILE_GRID's (still images 2; video 1 = the whole frame only)
    tile_grid: int | None = None
    # top-down modes: how many turned copies of each animal's crop are read (decoding.top_down.read_crops); None:
    # the skeleton's top_down turns offline, at most LIVE_CROP_TURNS live (fly13: 8 offline, 2 live; each turn is
    # one more crop a frame per animal: fly13 live 6.7 fps with 2, 2.1 with 8, docs/experiments/fly13.md)
    crop_turns: int | None = None
    # live run(): the network on the calling thread, reading, decoding, 3-D and tracking on a second one
    # (pipeline_live.live_poses; the same poses as one step() after another); None: two stages where the process
    # may run on more than one CPU (pipeline_live.use_two_stages)
    two_stage: bool | None = None

    def __post_init__(self) -> None:
        if self.mode not in ("live", "offline"):
            raise ValueError(f"unknown mode {self.mode!r}; choices: live, offline")
        if self.lookahead < 0 or self.chunk < 1 or self.overlap < 0 or self.max_people < 1:
            raise ValueError("lookahead and overlap must be >= 0, chunk and max_people >= 1")
        if self.known_count is not None and self.known_count < 1:
            raise ValueError(f"known_count must be at least 1, got {self.known_count}")
        if self.vote_radius is not None and self.vote_radius < 0:
            raise ValueError(f"vote_radius must be >= 0, got {self.vote_radius}")
        if self.crop_turns is not None and self.crop_turns not in (1, 2, 4, 8):
            raise ValueError(f"crop_turns must be 1, 2, 4 or 8, got {self.crop_turns}")
        if not 0.0 <= self.min_person_probability < 1.0:
            raise ValueError(f"min_person_probability must be in [0, 1), got {self.min_person_probability}")
        if self.tile_grid is not None and self.tile_grid < 1:
            raise ValueError("tile_grid must be >= 1 (1: the whole frame only)")


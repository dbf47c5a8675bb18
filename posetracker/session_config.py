"""SessionConfig: the parameters of a ``TrackingSession`` (``posetracker.session``), all with working defaults,
in five small groups besides the mode:

=============  ====================  ===================================================================
attribute      group                 what it decides
=============  ====================  ===================================================================
``network``    ``NetworkSettings``   how the network runs: threads, runtime, input, look-ahead, chunks
``people``     ``PeopleSettings``    who is read and output: how many, how sure, tracked or not
``refine``     ``RefineSettings``    the second look at the frame: refiners, tiles, turned animal crops
``motion``     ``MotionSettings``    each track's motion: the solve, rigid bones, left/right repairs
``depth``      ``DepthSettings``     3-D: the camera's field of view and the depth head's helpers
=============  ====================  ===================================================================

``SessionConfig(mode="offline", people=PeopleSettings(max_people=2))``; each group checks its own fields.
:meth:`SessionConfig.from_dict` reads settings written as one flat mapping of field names (the form before the
groups) as well as the grouped form.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import TYPE_CHECKING, Any, Literal

from posetracker.decoding.top_down import CropReading
from posetracker.defaults import DEFAULT_LOOKAHEAD, DEFAULT_MAX_PEOPLE

if TYPE_CHECKING:
    from posetracker.skeletons import SkeletonSpec

Mode = Literal["live", "offline"]
# RefineSettings.tile_grid when None: still images get 2 x 2 tiles; video not (on a one-person clip offline 12.7 ->
# 5.1 fps with them, the precision stage on; studies/tiles-and-crowds.md)
TILE_GRID = {"image": 2, "offline": 1, "live": 1}


LIVE_CROP_TURNS = 2  # live: at most this many turned reads of an animal's crop (RefineSettings.crop_turns)
LIVE_CROP_ROUNDS = 1  # live: each animal's crop read once (RefineSettings.crop_rounds)
SEARCH_SHIFT = 0.15  # offline top-down: an unsure animal's crop read again this fraction of the crop around it
LIVE_CENTRE_EVERY = 3  # live top-down: the whole-frame centre model every this many frames (RefineSettings.centre_every)


@dataclass(frozen=True)
class NetworkSettings:
    """How the network runs (``session``, ``pipeline_live``, ``offline_run``)."""

    threads: int = 1  # threads for inference
    runtime: Literal["auto", "torch"] = "auto"  # auto: the backbone runs in ONNX Runtime when installed
    int8: bool = True  # live, ONNX Runtime: the 8-bit backbone body where its companion ships (model/int8.py)
    # letterbox into a canvas fitted to the frame's aspect (256 x 160 for 16:9), not 256 x 256; a refiner that reads
    # the network's input image (method B's heatmap refiner, trained on squares) keeps the square
    fit_input: bool = True
    # frames too dark for the network (its brightest pixels under 32 of 255) are stretched first (model.low_light)
    low_light: bool = True
    lookahead: int = DEFAULT_LOOKAHEAD  # live: frames of look-ahead for the backward GRU (latency = lookahead / fps)
    chunk: int = 16  # offline: frames emitted per bidirectional pass
    overlap: int = 8  # offline: extra frames the backward GRU sees past each chunk
    # live run(): the network on the calling thread, reading, decoding, 3-D and tracking on a second one
    # (pipeline_live.live_poses; the same poses as one step() after another); None: two stages where the process
    # may run on more than one CPU (pipeline_live.use_two_stages)
    two_stage: bool | None = None

    def __post_init__(self) -> None:
        if self.lookahead < 0 or self.chunk < 1 or self.overlap < 0:
            raise ValueError("lookahead and overlap must be >= 0, chunk >= 1")


@dataclass(frozen=True)
class PeopleSettings:
    """Who is read and output (the decoder, ``frame_people``, the tracker, ``TrackingSession.run``)."""

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
    # exactly this many animals: that many readings kept a frame; offline, track fragments joined into that many ids
    known_count: int | None = None
    track: bool = True  # people followed from frame to frame under ids (False: each frame on its own)
    keep_unconfirmed: bool = False  # run(): keep people never confirmed as a track (id -1; e.g. a one-frame false positive)

    def __post_init__(self) -> None:
        if self.max_people < 1:
            raise ValueError(f"max_people must be >= 1, got {self.max_people}")
        if self.known_count is not None and self.known_count < 1:
            raise ValueError(f"known_count must be at least 1, got {self.known_count}")
        if self.vote_radius is not None and self.vote_radius < 0:
            raise ValueError(f"vote_radius must be >= 0, got {self.vote_radius}")
        if not 0.0 <= self.min_person_probability < 1.0:
            raise ValueError(f"min_person_probability must be in [0, 1), got {self.min_person_probability}")


@dataclass(frozen=True)
class RefineSettings:
    """The second look at the frame: refiners, tiles and the turned crops of animals (``refiners``,
    ``decoding.tiles``, ``decoding.top_down``)."""

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
    # the skeleton's top_down turns offline, at most LIVE_CROP_TURNS live for an unaligned crop model (each turn is
    # one more crop a frame per animal); an aligned one (fly13: 4) keeps its turns, which only a new animal's first
    # round reads (decoding.top_down.read_crops)
    crop_turns: int | None = None
    # top-down modes: how many times each animal is read, each round from a crop centred on the last round's
    # reading of its root (read_crops); None: the skeleton's top_down rounds offline, LIVE_CROP_ROUNDS live (fly13:
    # 3 offline: the held-out walking flies 11.56 -> 8.56 px at 2.2x the CPU a frame, studies/fly13.md)
    crop_rounds: int | None = None
    # top-down modes: an animal read unsurely is read again from crops this fraction of the crop around it
    # (decoding.top_down.search_unsure); None: SEARCH_SHIFT offline, 0 (none) live (fly13 offline: held-out walking
    # flies found 90 -> 100 %, studies/fly13.md)
    crop_search: float | None = None
    # live top-down modes with a crop model (fly13): the whole-frame centre model reads every centre_every-th frame
    # (and any frame whose crops, placed where the last frame read the animals, lose one: tracked_crops); None:
    # LIVE_CENTRE_EVERY live, 1 offline (1: every frame, through the live stream)
    centre_every: int | None = None
    # the precision stage's weights file (``crop``); None: refiner-crop-<skeleton>.safetensors beside the model
    crop_weights: str | None = None

    def __post_init__(self) -> None:
        if self.crop_turns is not None and self.crop_turns not in (1, 2, 4, 8):
            raise ValueError(f"crop_turns must be 1, 2, 4 or 8, got {self.crop_turns}")
        if self.crop_rounds is not None and self.crop_rounds not in (1, 2, 3):
            raise ValueError(f"crop_rounds must be 1, 2 or 3, got {self.crop_rounds}")
        if self.crop_search is not None and not 0.0 <= self.crop_search <= 0.5:
            raise ValueError(f"crop_search must be in [0, 0.5] (a fraction of the crop), got {self.crop_search}")
        if self.centre_every is not None and self.centre_every < 1:
            raise ValueError(f"centre_every must be >= 1, got {self.centre_every}")
        if self.tile_grid is not None and self.tile_grid < 1:
            raise ValueError("tile_grid must be >= 1 (1: the whole frame only)")


@dataclass(frozen=True)
class MotionSettings:
    """Each track's motion: its solve and repairs (the tracker, ``motion.whole_track``, ``motion.finish``)."""

    smoothing: bool = True  # the motion solve (offline: each track over the whole clip; live: the running smoother)
    rigid_bones: bool = True  # world: one length per bone and track (offline: over the recording; live: running median)
    fix_swaps: bool = True  # tracker: swap back left/right pairs read crossed against the track (tracking.mirror)
    fix_facing: bool = True  # left/right of people seen from behind by their facing (motion.sides; live: motion.live_sides)
    # offline: side views, exchange knees and ankles read on the other leg (tracking.near_leg), and the whole legs
    # from where the feet's left / right labels swap (motion.sides; a live result gets the latter when finished)
    fix_legs: bool = True


@dataclass(frozen=True)
class DepthSettings:
    """3-D: the camera and the trained depth head's helpers (``depth``)."""

    fov_deg: float = 60.0  # field of view of the source camera across the long side of the frame
    far_depth: bool = True  # trained depth head: blend body scale into the depth of people beyond its range
    pose_prior: bool = True  # trained depth head: mix its joint depths with the shipped pose prior's (depth.pose_prior)


GROUPS = {"network": NetworkSettings, "people": PeopleSettings, "refine": RefineSettings, "motion": MotionSettings,
          "depth": DepthSettings}


@dataclass(frozen=True)
class SessionConfig:
    """Parameters of a TrackingSession (all have working defaults): the mode and five groups (module docstring)."""

    mode: Mode = "live"
    network: NetworkSettings = NetworkSettings()
    people: PeopleSettings = PeopleSettings()
    refine: RefineSettings = RefineSettings()
    motion: MotionSettings = MotionSettings()
    depth: DepthSettings = DepthSettings()

    def __post_init__(self) -> None:
        if self.mode not in ("live", "offline"):
            raise ValueError(f"unknown mode {self.mode!r}; choices: live, offline")

    @classmethod
    def from_dict(cls, settings: Mapping[str, Any]) -> SessionConfig:
        """Settings read from a file: ``{"mode": ..., "lookahead": 2, "fov_deg": 70.0, ...}`` (one flat mapping of
        field names, the form before the groups) or ``{"mode": ..., "network": {"lookahead": 2}, ...}``, or both
        mixed; a list (JSON) where a tuple is meant becomes one. An unknown name raises ValueError."""
        owner = {f.name: group for group, kind in GROUPS.items() for f in fields(kind)}
        values: dict[str, dict[str, Any]] = {group: {} for group in GROUPS}
        for name, value in settings.items():
            if name in GROUPS and isinstance(value, Mapping):
                unknown = set(value) - {f.name for f in fields(GROUPS[name])}
                if unknown:
                    raise ValueError(f"unknown {name} setting(s) {', '.join(sorted(unknown))}")
                values[name].update(value)
            elif name in owner:
                values[owner[name]][name] = value
            elif name != "mode":
                raise ValueError(f"unknown setting {name!r}")
        if isinstance(values["refine"].get("refiners"), list):
            values["refine"]["refiners"] = tuple(values["refine"]["refiners"])
        return cls(mode=settings.get("mode", "live"), **{g: GROUPS[g](**v) for g, v in values.items()})


def top_down_reading(spec: SkeletonSpec, refine: RefineSettings, mode: Mode) -> tuple[CropReading, int]:
    """(how each animal's crop is read, centre every) in a session of a top-down mode whose skeleton says
    ``top_down`` (its turns, rounds, align, spread and mirror): ``refine``'s where given, else the mode's defaults
    (RefineSettings); live reads no spread and no mirrored crop (one more crop a frame per animal each)."""
    top_down, live = spec.top_down, mode == "live"
    own_turns = int(top_down.get("turns", 1))  # an aligned crop model's turns find a new animal's heading: all kept
    turns = refine.crop_turns or (min(own_turns, LIVE_CROP_TURNS) if live and not top_down.get("align") else own_turns)
    rounds = refine.crop_rounds or (LIVE_CROP_ROUNDS if live else int(top_down.get("rounds", 1)))
    search = refine.crop_search if refine.crop_search is not None else 0.0 if live else SEARCH_SHIFT
    how = CropReading(turns, rounds, search, spec.crop_align, 0.0 if live else float(top_down.get("spread", 0.0)),
                      spec.mirror_index if top_down.get("mirror") and not live else None)
    return how, refine.centre_every or (LIVE_CENTRE_EVERY if live else 1)

"""SessionConfig's groups: each checks its own fields, and settings written flat (before the groups) read back."""

import dataclasses
import json

import pytest

from posetracker.session_config import (
    DepthSettings, MotionSettings, NetworkSettings, PeopleSettings, RefineSettings, SessionConfig,
)

# every setting as one flat JSON object, the form SessionConfig had before its groups (dataclasses.asdict of it)
OLD_FLAT = """{"mode": "offline", "lookahead": 2, "chunk": 12, "overlap": 4, "max_people": 3, "score_threshold": 0.2,
 "min_person_probability": 0.05, "vote_radius": 1, "fov_deg": 70.0, "smoothing": false, "far_depth": false,
 "pose_prior": false, "rigid_bones": false, "track": false, "fix_swaps": false, "known_count": 2,
 "fix_facing": false, "fix_legs": false, "keep_unconfirmed": true, "threads": 2, "runtime": "torch", "int8": false,
 "fit_input": false, "low_light": false, "refiners": ["crop", "graph"], "crop_budget_ms": 20.0, "tile_grid": 3,
 "crop_turns": 4, "two_stage": false}"""

NEWER_THAN_FLAT = {"crop_weights", "crop_rounds", "crop_search", "centre_every"}  # RefineSettings.crop_weights (issue #47), crop_rounds, crop_search, centre_every (#49)


def test_an_old_flat_file_reads_back_into_the_groups() -> None:
    config = SessionConfig.from_dict(json.loads(OLD_FLAT))
    assert config == SessionConfig(
        mode="offline",
        network=NetworkSettings(threads=2, runtime="torch", int8=False, fit_input=False, low_light=False, lookahead=2,
                                chunk=12, overlap=4, two_stage=False),
        people=PeopleSettings(max_people=3, score_threshold=0.2, min_person_probability=0.05, vote_radius=1,
                              known_count=2, track=False, keep_unconfirmed=True),
        refine=RefineSettings(refiners=("crop", "graph"), crop_budget_ms=20.0, tile_grid=3, crop_turns=4),
        motion=MotionSettings(smoothing=False, rigid_bones=False, fix_swaps=False, fix_facing=False, fix_legs=False),
        depth=DepthSettings(fov_deg=70.0, far_depth=False, pose_prior=False))
    # every field of the groups has a value from the old file: none fell back to a default (but settings added
    # after the groups, which no flat file has)
    defaults = SessionConfig()
    for group in ("network", "people", "refine", "motion", "depth"):
        for f in dataclasses.fields(getattr(config, group)):
            if f.name in NEWER_THAN_FLAT:
                continue
            assert getattr(getattr(config, group), f.name) != getattr(getattr(defaults, group), f.name), f.name


def test_a_partial_flat_file_keeps_the_defaults_and_the_grouped_form_round_trips() -> None:
    assert SessionConfig.from_dict({"lookahead": 0, "fov_deg": 50.0}) == SessionConfig(
        network=NetworkSettings(lookahead=0), depth=DepthSettings(fov_deg=50.0))
    config = SessionConfig.from_dict(json.loads(OLD_FLAT))
    assert SessionConfig.from_dict(json.loads(json.dumps(dataclasses.asdict(config)))) == config
    assert SessionConfig.from_dict({}) == SessionConfig()


def test_unknown_settings_and_bad_values_are_refused() -> None:
    with pytest.raises(ValueError, match="lookahed"):
        SessionConfig.from_dict({"lookahed": 1})
    with pytest.raises(ValueError, match="network setting"):
        SessionConfig.from_dict({"network": {"fov_deg": 60.0}})
    with pytest.raises(ValueError, match="chunk"):
        SessionConfig.from_dict({"chunk": 0})  # the group's own check
    with pytest.raises(ValueError, match="mode"):
        SessionConfig(mode="batch")  # type: ignore[arg-type]


@pytest.mark.parametrize("make", [lambda: NetworkSettings(lookahead=-1), lambda: NetworkSettings(overlap=-1),
                                  lambda: PeopleSettings(max_people=0), lambda: PeopleSettings(known_count=0),
                                  lambda: PeopleSettings(min_person_probability=1.0),
                                  lambda: RefineSettings(tile_grid=0), lambda: RefineSettings(crop_turns=3)])
def test_each_group_checks_its_own_fields(make) -> None:
    with pytest.raises(ValueError):
        make()

"""Session recording and replay (no Qt).

A recording is a folder::

    video.mp4     frames as captured (fragmented MP4, one fragment per second,
                  so an interrupted recording stays readable up to its last second)
    poses.jsonl   one JSON line per tracked frame, appended and flushed per frame
                  (fsync'ed once per second); the frame layout of the JSON exporter
                  plus ``source_index`` / ``source_time_s``; ``index`` and ``time_s``
                  refer to the frame number and time in video.mp4
    meta.json     written when the recording starts and updated when it stops

:class:`SessionRecorder` writes one; :func:`open_recording` reads it back;
:class:`ReplaySession` plays its poses back frame by frame like a TrackingSession.
"""

from posetracker.recording.recorder import RecordingError, SessionRecorder, VideoWriter, is_recording_folder
from posetracker.recording.replay import BlankSource, ReplaySession, open_recording, replay_source
from posetracker.recording.spill import PoseSpill

__all__ = [
    "BlankSource",
    "PoseSpill",
    "RecordingError",
    "ReplaySession",
    "SessionRecorder",
    "VideoWriter",
    "is_recording_folder",
    "open_recording",
    "replay_source",
]

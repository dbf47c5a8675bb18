"""Product defaults shared by the library, the CLI and the app (no heavy imports: the GUI reads them at start-up)."""

# Live look-ahead: one frame (one inferred frame of latency: 33 ms at 30 fps if inference keeps up) lets
# the backward GRU halve the jitter (0.42-0.45x of the pretrained-only model on held-out clips) with no lag
# beyond that frame; at 0 the causal smoother alone reaches 0.60x and lags 0.3-0.6 frames
# (models/README.md, `posetracker train clip-eval`).
DEFAULT_LOOKAHEAD = 1

# The most people (or animals) decoded per frame; 1 for a one-subject recording drops every weaker copy.
# 30: a street or a dance floor holds more than 10 (at 10, the ten labelled dancers of a PoseTrack18 frame
# lost their places to the crowd around them); only people actually found cost time.
DEFAULT_MAX_PEOPLE = 30
MAX_PEOPLE_LIMIT = 100  # the most the app offers

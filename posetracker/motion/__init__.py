"""The per-track motion every output reads: finishing a tracked sequence (:mod:`.finish`) and the motion
solve (:mod:`.solve`). Nothing is imported here: import the submodule you need."""

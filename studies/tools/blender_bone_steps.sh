#!/usr/bin/env bash
# Regenerate the BVH files of the four issue-#46 clips with today's code and measure their bone steps in
# real Blender (studies/tools/blender_bone_steps.py; studies/blender-bone-steps.md).
#
#   studies/tools/blender_bone_steps.sh OUT_DIR [NAME ...]      # NAME: dancer walk pose2sim crowd (default: all)
#
# Writes OUT_DIR/NAME.json (posetracker process, offline, 1 thread), OUT_DIR/NAME*.bvh (+ .bvh.json; one
# file per person), OUT_DIR/bone_steps.json and OUT_DIR/bone_steps.txt (the table). Env: POSETRACKER_BPY_PYTHON
# (a Python with bpy 4.5; default /opt/bpyvenv/bin/python), POSETRACKER_DATA (default /work/shared/data),
# SKIP_PROCESS=1 (measure the BVH files already in OUT_DIR), REV=COMMIT (run the code of that commit, unpacked
# with git archive into OUT_DIR/src, instead of this working tree, which others may be editing).
set -euo pipefail
shopt -s nullglob
OUT=${1:?usage: studies/tools/blender_bone_steps.sh OUT_DIR [NAME ...]}
shift
NAMES=("$@")
[ ${#NAMES[@]} -gt 0 ] || NAMES=(dancer walk pose2sim crowd)
BPY=${POSETRACKER_BPY_PYTHON:-/opt/bpyvenv/bin/python}
DATA=${POSETRACKER_DATA:-/work/shared/data}
TOOLS=$(cd "$(dirname "$0")" && pwd)
REPO=$(cd "$TOOLS/../.." && pwd)
mkdir -p "$OUT"
if [ -n "${REV:-}" ] && [ "${SKIP_PROCESS:-0}" != 1 ]; then
  rm -rf "$OUT/src" && mkdir -p "$OUT/src"
  git -C "$REPO" archive "$REV" | tar -x -C "$OUT/src"
  echo "code: $(git -C "$REPO" rev-parse "$REV") in $OUT/src" >&2
  REPO=$(cd "$OUT/src" && pwd)
fi
export PYTHONPATH="$REPO${PYTHONPATH:+:$PYTHONPATH}"   # this code's posetracker, whatever is installed
export OMP_NUM_THREADS=1
declare -A CLIP=(
  [dancer]=$DATA/video/sleap_dance_human/dance.mp4
  [walk]=$DATA/video/more/sports2d_demos/demo4_older_woman_walking.mp4
  [pose2sim]=$DATA/video/more/pose2sim_demo/multi_cam02.mp4
  [crowd]=$DATA/video/video_openpose_examples/video.avi
)
BVHS=()
for name in "${NAMES[@]}"; do
  clip=${CLIP[$name]:?unknown clip name $name}
  if [ "${SKIP_PROCESS:-0}" != 1 ]; then
    echo "== $name: $clip" >&2
    /usr/bin/time -f "$name process: %e s" posetracker process "$clip" --out "$OUT/$name.json" --force
    rm -f "$OUT/$name".bvh "$OUT/$name"_*.bvh "$OUT/$name".bvh.json "$OUT/$name"_*.bvh.json
    posetracker export "$OUT/$name.json" --format bvh --out "$OUT/$name.bvh" --force
  fi
  for f in "$OUT/$name".bvh "$OUT/$name"_*.bvh; do if [ -e "$f" ]; then BVHS+=("$f"); fi; done
done
[ ${#BVHS[@]} -gt 0 ] || { echo "no BVH files in $OUT" >&2; exit 1; }
BVHS=($(printf "%s\n" "${BVHS[@]}" | sort -V))
"$BPY" "$TOOLS/blender_bone_steps.py" --json "$OUT/bone_steps.json" --top 15 "${BVHS[@]}" | tee "$OUT/bone_steps.txt"

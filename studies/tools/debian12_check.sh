#!/usr/bin/env bash
# The README's set-up on a minimal Debian 12, as a newcomer runs it (studies/debian12-setup.md).
#
#   sudo studies/tools/debian12_check.sh ROOT [OUT_DIR]
#
# ROOT: a Debian 12 root made by `debootstrap --variant=minbase bookworm ROOT` (made here when ROOT has none).
# Run as root on a Linux host with Xvfb (the X server stays on the host, so that its own libraries cannot
# stand in for missing ones). In the chroot: apt-get install python3 python3-venv python3-pip git
# ca-certificates (nothing else), a fresh clone of this repository (REV, default HEAD) and a venv, then:
#   1. bare system: README's run command as written (pip install -e ".[gui]" && python main.py) must end
#      with the app's message; the packages it names must be exactly those that ship the libraries `ldd`
#      and a dlopen find missing (checked with dpkg -S once they are installed);
#   2. bare system: README's headless command (posetracker process assets/sample_dance.mp4);
#   3. README's apt-get line, exactly the packages it names; then python main.py --screenshot ... must start,
#      track and save its screenshots (copied to OUT_DIR, default /tmp/debian12-check);
#   4. README's test command (pip install -e ".[dev]" && python -m pytest), unless SKIP_TESTS=1.
# Each step prints "STEP <name>: ok|FAIL ...". Re-runs start from the bare system again: README's packages are
# purged (apt-get autoremove --purge) first. Env: REV, SKIP_TESTS=1, XDISPLAY (default :77), PYTEST_ARGS
# (default "-x -q"). The host's pip configuration (files, PIP_* variables, local wheel folders, extra CA
# certificates) is carried into the chroot so that pip resolves the same packages as on the host.
set -uo pipefail
export LC_ALL=C
ROOT=${1:?usage: studies/tools/debian12_check.sh ROOT [OUT_DIR]}
OUT=${2:-/tmp/debian12-check}
REPO=$(cd "$(dirname "$0")/../.." && pwd)
REV=$(git -C "$REPO" rev-parse "${REV:-HEAD}")
XDISPLAY=${XDISPLAY:-:77}
PYTEST_ARGS=${PYTEST_ARGS:--x -q}
mkdir -p "$OUT"
FAILED=0
step() {  # step NAME RC [DETAIL]
  if [ "$2" = 0 ]; then echo "STEP $1: ok${3:+ ($3)}"; else echo "STEP $1: FAIL (rc $2)${3:+ $3}"; FAILED=1; fi
}

# --- the root, the mounts, the X server ------------------------------------------------------------------
if [ ! -f "$ROOT/etc/debian_version" ]; then
  command -v debootstrap >/dev/null || apt-get install -y -q debootstrap >/dev/null
  debootstrap --variant=minbase bookworm "$ROOT" http://deb.debian.org/debian >"$OUT/debootstrap.log" 2>&1
  step debootstrap $? "$ROOT"
fi
cat >"$ROOT/etc/apt/sources.list" <<'EOF'
deb http://deb.debian.org/debian bookworm main
deb http://deb.debian.org/debian bookworm-updates main
deb http://deb.debian.org/debian-security bookworm-security main
EOF
MOUNTS=()
bind() {  # bind SRC DST [ro]
  mkdir -p "$ROOT$2" && mount --bind "$1" "$ROOT$2" && MOUNTS=("$ROOT$2" "${MOUNTS[@]}")
  [ "${3:-}" = ro ] && mount -o remount,bind,ro "$ROOT$2"
}
XVFB=
cleanup() {
  for m in "${MOUNTS[@]}"; do umount "$m" 2>/dev/null || umount -l "$m"; done
  [ -n "$XVFB" ] && kill "$XVFB" 2>/dev/null
}
trap cleanup EXIT
trap "exit 130" INT TERM
mount -t proc proc "$ROOT/proc" && MOUNTS=("$ROOT/proc")
mount -t sysfs sysfs "$ROOT/sys" && MOUNTS=("$ROOT/sys" "${MOUNTS[@]}")
bind /dev /dev
bind "$REPO" /src/posetracker.git ro
mkdir -p /tmp/.X11-unix && bind /tmp/.X11-unix /tmp/.X11-unix
# the host's pip set-up: config files, constraints, local wheel folders and indexes, PIP_* variables
for f in /etc/pip.conf /etc/xdg/pip/pip.conf /etc/xdg/pip/constraints.txt "$HOME/.config/pip/pip.conf"; do
  [ -f "$f" ] && mkdir -p "$ROOT$(dirname "${f/#$HOME//root}")" && cp "$f" "$ROOT${f/#$HOME//root}"
done
for d in $(pip config list 2>/dev/null | grep -oE "(file://)?/[^' ]+" | sed 's|^file://||; s|/simple/*$||' | sort -u); do
  [ -d "$d" ] && bind "$d" "$d" ro  # an index's folder whole: its simple/ pages point into files/ beside it
done
cp /etc/resolv.conf "$ROOT/etc/resolv.conf"
if compgen -G "/usr/local/share/ca-certificates/*.crt" >/dev/null; then
  mkdir -p "$ROOT/usr/local/share/ca-certificates" && cp /usr/local/share/ca-certificates/*.crt "$_/"
fi
if [ ! -S "/tmp/.X11-unix/X${XDISPLAY#:}" ]; then
  Xvfb "$XDISPLAY" -screen 0 1600x1000x24 -nolisten tcp >"$OUT/xvfb.log" 2>&1 &
  XVFB=$!
  sleep 2
fi
ENV=(env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LANG=C.UTF-8 DEBIAN_FRONTEND=noninteractive
     OMP_NUM_THREADS=1 $(env | grep '^PIP_'))
in_root() { chroot "$ROOT" "${ENV[@]}" bash -c "$1"; }
in_repo() { chroot "$ROOT" "${ENV[@]}" bash -c ". /root/venv/bin/activate && cd /root/posetracker && $1"; }

# --- what a newcomer installs: Python, venv, pip, git -------------------------------------------------------
README_APT=$(tr '\n' ' ' <"$REPO/README.md" | grep -oE 'apt-get install -y +--no-install-recommends( +lib[a-z0-9.+-]+)+' \
             | head -1 | sed 's/.*--no-install-recommends *//')
in_root "apt-get purge -y -q $README_APT >/dev/null 2>&1; apt-get autoremove --purge -y -q >/dev/null 2>&1;
         apt-get update -q >/dev/null && apt-get install -y -q --no-install-recommends python3 python3-venv \
         python3-pip git ca-certificates >/dev/null && update-ca-certificates >/dev/null" >"$OUT/apt-base.log" 2>&1
step apt-base $? "$(in_root 'python3 --version; dpkg -l | grep -c ^ii' | tr '\n' ' ')packages"
in_root "git config --global --add safe.directory '*'; rm -rf /root/posetracker /root/venv &&
         git clone -q /src/posetracker.git /root/posetracker && git -C /root/posetracker checkout -q $REV &&
         python3 -m venv /root/venv" >"$OUT/clone.log" 2>&1
step clone-venv $? "$REV"

# --- 1. bare system: README's run command as written ---------------------------------------------------------
RUN_CMD=$(awk '/^## Set up/{s=1} s&&/^```bash/{getline; print; exit}' "$REPO/README.md")
in_repo "DISPLAY=$XDISPLAY timeout 600 bash -c '$RUN_CMD'" >"$OUT/run-bare.log" 2>&1
rc=$?
if ! in_repo "python -c 'import posetracker, PySide6'" >/dev/null 2>&1; then
  step pip-install-gui 1 "see $OUT/run-bare.log"; exit 1
fi
MESSAGE=$(sed -n '/^PoseTracker cannot/,/^or run without/p' "$OUT/run-bare.log")
[ "$rc" = 2 ] && [ -n "$MESSAGE" ]
step run-bare $? "'$RUN_CMD' -> rc $rc"
echo "$MESSAGE" | sed 's/^/    /'
NAMED_LIBS=$(echo "$MESSAGE" | head -1 | sed 's/.*lacks //; s/\.$//; s/, / /g')
NAMED_PKGS=$(echo "$MESSAGE" | grep -oE 'no-install-recommends .*' | sed 's/no-install-recommends //')
# what is really missing: ldd of the QtWidgets binding and the xcb plugin, and the two libraries loaded later
LDD_LIBS=$(in_repo 'Q=$(python -c "import PySide6, os; print(os.path.dirname(PySide6.__file__))");
  for f in $Q/QtWidgets.abi3.so $Q/Qt/plugins/platforms/libqxcb.so $Q/Qt/lib/libQt6XcbQpa.so.6; do ldd $f; done |
  sed -n "s/^\s*\(\S*\) => not found/\1/p";
  for s in libxcb-cursor.so.0 libGL.so.1; do python -c "import ctypes; ctypes.CDLL(\"$s\")" 2>/dev/null || echo $s; done' |
  sort -u | tr '\n' ' ')
[ "$(echo $NAMED_LIBS | tr ' ' '\n' | sort -u | tr '\n' ' ')" = "$LDD_LIBS" ]
step message-names-every-missing-library $? "$(echo $LDD_LIBS | wc -w) missing by ldd: $LDD_LIBS"

# --- 2. bare system: the headless pipeline -------------------------------------------------------------------
in_repo "rm -f sample_dance.poses.csv; timeout 900 posetracker process assets/sample_dance.mp4 &&
         test \$(wc -l <sample_dance.poses.csv) -gt 1000" >"$OUT/process-bare.log" 2>&1
step process-headless-bare $? "$(tail -1 "$OUT/process-bare.log")"

# --- 3. README's apt-get line, then the window -------------------------------------------------------------
in_root "apt-get install -y -q --no-install-recommends $README_APT" >"$OUT/apt-readme.log" 2>&1
step apt-readme $? "$(echo $README_APT | wc -w) packages named: $README_APT; $(grep -oE '[0-9]+ newly installed' "$OUT/apt-readme.log")"
SHIPPED=$(for lib in $NAMED_LIBS; do in_root "dpkg -S /usr/lib/x86_64-linux-gnu/$lib /lib/x86_64-linux-gnu/$lib 2>/dev/null" |
          head -1 | cut -d: -f1; done | sort -u | tr '\n' ' ')
[ "$(echo $NAMED_PKGS | tr ' ' '\n' | sort -u | tr '\n' ' ')" = "$SHIPPED" ]
step message-packages-ship-those-libraries $? "message: $NAMED_PKGS | dpkg -S: $SHIPPED"
in_repo "DISPLAY=$XDISPLAY timeout 600 python main.py --screenshot /tmp/deb12.png --quit-after 100" >"$OUT/run-readme.log" 2>&1
rc=$?
cp "$ROOT"/tmp/deb12*.png "$OUT/" 2>/dev/null
[ "$rc" = 0 ] && [ -s "$OUT/deb12.png" ]
step run-with-readme-packages $? "$(grep -E '^saved|fps' "$OUT/run-readme.log" | tr '\n' ' ')"

# --- 4. README's test command ------------------------------------------------------------------------------
if [ "${SKIP_TESTS:-0}" != 1 ]; then
  TEST_CMD=$(awk '/^## Set up/{s=1} s&&/^```bash/{n++; if(n==2){getline; print; exit}}' "$REPO/README.md")
  in_repo "timeout 3000 bash -c '$TEST_CMD $PYTEST_ARGS'" >"$OUT/tests.log" 2>&1
  step tests $? "'$TEST_CMD $PYTEST_ARGS': $(grep -E '(passed|failed|error)' "$OUT/tests.log" | tail -1)"
fi
echo "logs and screenshots: $OUT"
exit $FAILED

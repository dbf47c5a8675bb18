#!/bin/bash
# usage: cgcpu.sh CMD... ; runs CMD in a cpuacct cgroup of its own (cgroup v1, root) and prints the CPU seconds
# of CMD and of every process it started, those killed or left behind included (the Ray workers of a stopped
# cluster), whatever else runs on the machine. Processes still in the group after CMD are listed.
set -u
cg=/sys/fs/cgroup/cpuacct/cgcpu.$$
mkdir "$cg" || exit 2
( echo "$BASHPID" > "$cg/cgroup.procs" && exec "$@" )
rc=$?
read -r used < "$cg/cpuacct.usage"
read -r _ user < <(grep user "$cg/cpuacct.stat"); read -r _ sys < <(grep system "$cg/cpuacct.stat")
left=$(cat "$cg/cgroup.procs")
echo "tree CPU s: $(awk "BEGIN{printf \"%.1f\", $used/1e9}") (user $((user/100)), system $((sys/100))); rc $rc" >&2
[ -n "$left" ] && echo "still running in the group: $(for p in $left; do tr '\0' ' ' < /proc/$p/cmdline 2>/dev/null | cut -c1-80; echo; done)" >&2
[ -z "$left" ] && rmdir "$cg"
exit $rc

#!/bin/sh
# Device check: interrupting `gavel-profile run` on one real GPU keeps what finished, leaves no
# CUDA process or MPS daemon behind, and a rerun resumes. Run from the repository root:
#
#   OUT=/tmp/intr GAVEL_PROFILE=bin/gavel-profile sh examples/pytorch/interrupt-h200.sh
#
# (a) --sharing mps: SIGINT 55 s in (meant after the 3 isolated rates; on the H200 it came during
#     the third, with 2 measurements written); then
#     the processes left (ps, nvidia-smi), and the same command again, to the end;
# (b) time-slicing: SIGTERM 22 s in (during the second isolated rate), and the processes left.
# Needs python3 with torch (CUDA build). examples/pytorch/h200/interrupt/ holds what it wrote on
# an H200. DEVICE="--cpu" MPS=time-slicing runs the same steps on the CPU.
#
# `run` execs the binary: a backgrounded shell function is a subshell, and a signal sent to
# its process id would stop the subshell and leave gavel-profile running.
set -u
START=$(date +%s)
OUT=${OUT:-/tmp/gavel-intr}
BIN=${GAVEL_PROFILE:-bin/gavel-profile}
DEVICE=${DEVICE:---gpu 0}
MPS=${MPS:-mps}
mkdir -p "$OUT"
note() { echo "$* at $(( $(date +%s) - START )) s" | tee -a "$OUT/status.txt"; }
left() { # left NAME: what is still running 3 s after the run returned
  sleep 3
  { echo "== $1: processes"; ps -eo pid,pgid,stat,etimes,args | grep -E 'python3|mps|gavel' | grep -v grep
    echo "== $1: nvidia-smi compute apps"
    nvidia-smi --query-compute-apps=pid,process_name,used_memory --format=csv; } >> "$OUT/left.txt" 2>&1
}
run() { # run SHARING TABLE: the profile of profile-h200.sh, short windows
  exec "$BIN" run --name "MLP-tiny (batch size 256)" $DEVICE --sharing "$1" \
      --references examples/pytorch/refs.json --table "$OUT/$2" --json \
      --window 1s --max-window 8s --max-warmup 8s --precision 0.02 \
      --startup-timeout 90s --stall-timeout 60s --kill-grace 5s \
      -- python3 examples/pytorch/mlp_tiny.py --batch-size 256
}

run "$MPS" mps.json > "$OUT/mps-1.json" 2> "$OUT/mps-1.log" &
PID=$!
sleep 55
kill -INT "$PID"
wait "$PID"
note "mps run, SIGINT at 55 s: exit status $?"
left "after SIGINT (mps)"
cp "$OUT/mps.json" "$OUT/mps-after-sigint.json"
(run "$MPS" mps.json > "$OUT/mps-2.json" 2> "$OUT/mps-2.log")
note "mps rerun: exit status $?"
left "after the mps rerun"

run time-slicing ts.json > "$OUT/ts.json.out" 2> "$OUT/ts.log" & # kept as h200/interrupt/ts-run.json
PID=$!
sleep 22
kill -TERM "$PID"
wait "$PID"
note "time-slicing run, SIGTERM at 22 s: exit status $?"
left "after SIGTERM (time-slicing)"
"$BIN" table show --table "$OUT/mps.json" --pairs "MLP-tiny (batch size 256)" > "$OUT/table.txt" 2>&1
cat "$OUT"/mps-1.log "$OUT"/mps-2.log "$OUT"/ts.log "$OUT/left.txt" "$OUT/table.txt" "$OUT/status.txt"

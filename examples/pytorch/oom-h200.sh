#!/bin/sh
# Device check: the out-of-memory and infeasible paths of `gavel-profile run` on one real GPU
# (written for an H200, about 140 GiB). Run from the repository root:
#
#   OUT=/tmp/oom GAVEL_PROFILE=bin/gavel-profile sh examples/pytorch/oom-h200.sh
#
# (a) a job holding 80 GiB is measured alone, and so is the 90 GiB reference;
# (b) their pairs (80+80 and 80+90 GiB) are recorded infeasible by the memory pre-check,
#     without running;
# (c) a job asking for 200 GiB prints torch's CUDA out-of-memory error: rate 0 alone, and its
#     pairs infeasible without running (it cannot run alone).
# DEVICE="--cpu" runs the same steps on the CPU (no memory pre-check there: CPU slots have no
# memory size). Needs python3 with torch (CUDA build). examples/pytorch/h200/oom/ holds what it
# wrote on an H200.
set -u
START=$(date +%s)
OUT=${OUT:-/tmp/gavel-oom}
BIN=${GAVEL_PROFILE:-bin/gavel-profile}
DEVICE=${DEVICE:---gpu 0}
mkdir -p "$OUT"
SMI=
if command -v nvidia-smi >/dev/null; then
  nvidia-smi --query-gpu=timestamp,memory.used,memory.total,utilization.gpu --format=csv -l 1 > "$OUT/smi.csv" 2>&1 &
  SMI=$!
fi

run() { # run NAME GIB TIMEOUT: profile mem_hog.py --gib GIB against the 90 GiB reference
  timeout "$3" "$BIN" run --name "$1" $DEVICE \
      --references examples/pytorch/h200/oom-refs.json --table "$OUT/oom.json" --json \
      --window 1s --max-window 10s --max-warmup 10s \
      --startup-timeout 90s --stall-timeout 60s --kill-grace 5s \
      -- python3 examples/pytorch/mem_hog.py --gib "$2" \
      > "$OUT/run-$2.json" 2> "$OUT/run-$2.log"
  echo "run --name '$1' exit status $? at $(( $(date +%s) - START )) s" | tee -a "$OUT/status.txt"
}
run "MemHog (80 GiB)" 80 120
run "MemHog (200 GiB)" 200 70

[ -n "$SMI" ] && kill "$SMI"
{
  "$BIN" table show --table "$OUT/oom.json"
  "$BIN" table show --table "$OUT/oom.json" --pairs "MemHog (80 GiB)"
  "$BIN" table show --table "$OUT/oom.json" --pairs "MemHog (200 GiB)"
} > "$OUT/table.txt" 2>&1
cat "$OUT"/run-*.log "$OUT/table.txt" "$OUT/status.txt"

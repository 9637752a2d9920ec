#!/bin/sh
# Device check: pairs that pass gavel-profile's memory pre-check and then run out of memory
# together, under time-slicing and under MPS, on one real GPU (written for an H200, about
# 140 GiB). Run from the repository root:
#
#   OUT=/tmp/oom-pair GAVEL_PROFILE=bin/gavel-profile sh examples/pytorch/oom-pair-h200.sh
#
# "MemGrow (10 -> 75 GiB)" holds 10 GiB and grows to 75 GiB 45 s after it starts
# (mem_hog.py --grow-to). Its isolated rate is measured in under 45 s, so its recorded peak is
# about 10 GiB; the pairs are then measured for at least a minute (--min-batches 12 of 5 s) and
# never re-measure the isolated rates (--refresh-isolated -1s):
# (a) MemGrow + MemGrow (10 + 10 GiB at the pre-check, 75 + 75 GiB later) and MemGrow + the
#     90 GiB reference (10 + 90, later 75 + 90) pass the pre-check, start, and one job of each
#     pair runs out of memory when it grows: both pairs must be recorded infeasible;
# (b) the same under --sharing mps, into a copy of the table holding the isolated rates only;
# (c) time permitting, the plain profile of examples/pytorch/profile-h200.sh with shorter
#     windows, as a check that nothing else changed on a real GPU.
# Needs python3 with torch (CUDA build). examples/pytorch/h200/oom-pair/ holds what it wrote on
# an H200.
set -u
START=$(date +%s)
OUT=${OUT:-/tmp/gavel-oom-pair}
BIN=${GAVEL_PROFILE:-bin/gavel-profile}
mkdir -p "$OUT/ts" "$OUT/mps"
SMI=
if command -v nvidia-smi >/dev/null; then
  nvidia-smi > "$OUT/nvidia-smi.txt" 2>&1
  nvidia-smi --query-gpu=timestamp,memory.used,memory.total,utilization.gpu --format=csv -l 1 > "$OUT/smi.csv" 2>&1 &
  SMI=$!
fi
GROW="MemGrow (10 -> 75 GiB)"
note() { echo "$1 exit status $2 at $(( $(date +%s) - START )) s" | tee -a "$OUT/status.txt"; }

# Isolated rates only, short windows (done well before the 45 s growth).
ISO="--no-pairs --gpu 0 --window 1s --max-window 8s --max-warmup 8s --startup-timeout 90s --stall-timeout 60s --kill-grace 5s"
timeout 90 "$BIN" run --name "MemHog (90 GiB)" $ISO --table "$OUT/ts/grow.json" --json \
    -- python3 examples/pytorch/mem_hog.py --gib 90 > "$OUT/iso-90.json" 2> "$OUT/iso-90.log"
note "isolated MemHog (90 GiB)" $?
timeout 90 "$BIN" run --name "$GROW" $ISO --table "$OUT/ts/grow.json" --json \
    -- python3 examples/pytorch/mem_hog.py --gib 10 --grow-to 75 --grow-after 45 \
    > "$OUT/iso-grow.json" 2> "$OUT/iso-grow.log"
note "isolated $GROW" $?
cp "$OUT/ts/grow.json" "$OUT/mps/grow.json"
cp "$OUT/ts/grow.measurements.json" "$OUT/mps/grow.measurements.json"

pairs() { # pairs ts|mps: MemGrow with itself and with the 90 GiB reference
  timeout 200 "$BIN" run --name "$GROW" --gpu 0 --sharing "$(echo "$1" | sed s/ts/time-slicing/)" \
      --references examples/pytorch/h200/oom-refs.json --table "$OUT/$1/grow.json" --json \
      --refresh-isolated -1s --window 5s --min-batches 12 --max-window 70s --max-warmup 20s \
      --startup-timeout 90s --stall-timeout 60s --kill-grace 5s \
      -- python3 examples/pytorch/mem_hog.py --gib 10 --grow-to 75 --grow-after 45 \
      > "$OUT/pairs-$1.json" 2> "$OUT/pairs-$1.log"
  note "pairs $1" $?
  { "$BIN" table show --table "$OUT/$1/grow.json"
    "$BIN" table show --table "$OUT/$1/grow.json" --pairs "$GROW"; } > "$OUT/table-$1.txt" 2>&1
}
pairs ts
pairs mps

left=$(( 420 - ($(date +%s) - START) ))
if [ "$left" -gt 60 ]; then
  mkdir -p "$OUT/plain"
  timeout "$left" "$BIN" run --name "MLP-tiny (batch size 256)" --gpu 0 \
      --references examples/pytorch/refs.json --table "$OUT/plain/h200.json" --json \
      --window 1s --max-window 8s --max-warmup 8s --precision 0.02 \
      --startup-timeout 90s --stall-timeout 60s --kill-grace 5s \
      -- python3 examples/pytorch/mlp_tiny.py --batch-size 256 \
      > "$OUT/plain/run.json" 2> "$OUT/plain/run.log"
  note "plain profile" $?
  "$BIN" table show --table "$OUT/plain/h200.json" --pairs "MLP-tiny (batch size 256)" > "$OUT/plain/table.txt" 2>&1
fi
[ -n "$SMI" ] && kill "$SMI"
cat "$OUT"/pairs-*.log "$OUT"/table-*.txt "$OUT/status.txt"

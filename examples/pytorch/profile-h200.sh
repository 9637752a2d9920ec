#!/bin/sh
# Device check: profile the example jobs on one NVIDIA GPU (written for an H200 node) and keep
# the table, its sidecar and the logs under $OUT. Fits a 10-minute slot: one GPU, 3 isolated
# rates and 3 pairs with short windows. Run from the repository root:
#
#   go build -o bin/gavel-profile ./cmd/gavel-profile      # on a machine with Go
#   OUT=/tmp/h200 GAVEL_PROFILE=bin/gavel-profile sh examples/pytorch/profile-h200.sh
#
# Needs python3 with torch (CUDA build) on the GPU machine.
# examples/pytorch/h200/ holds what it wrote on an H200, and how the binary got there.
set -eu
START=$(date +%s)
OUT=${OUT:-/tmp/gavel-h200}
BIN=${GAVEL_PROFILE:-bin/gavel-profile}
GPU=${GPU:-0}
mkdir -p "$OUT"

"$BIN" devices | tee "$OUT/devices.txt"
"$BIN" devices --json > "$OUT/devices.json"
python3 -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda, torch.cuda.get_device_name(0))' \
    | tee "$OUT/torch.txt"

# Isolated rates of the tiny MLP and both references, then MLP+MLP, MLP+ResNet, MLP+LM,
# all on GPU $GPU under time-slicing. Windows are shorter than the defaults to fit the slot.
set +e
timeout 480 "$BIN" run --name "MLP-tiny (batch size 256)" --gpu "$GPU" \
    --references examples/pytorch/refs.json --table "$OUT/h200.json" --json \
    --window 1s --max-window 20s --max-warmup 15s --precision 0.02 \
    --startup-timeout 90s --stall-timeout 60s --kill-grace 5s \
    -- python3 examples/pytorch/mlp_tiny.py --batch-size 256 \
    > "$OUT/run.json" 2> "$OUT/run.log"
rc=$?
echo "run exit status $rc after $(( $(date +%s) - START )) s" | tee "$OUT/status.txt"
set -e
"$BIN" table show --table "$OUT/h200.json" > "$OUT/table.txt" 2>&1 || true
"$BIN" table show --table "$OUT/h200.json" --pairs "MLP-tiny (batch size 256)" >> "$OUT/table.txt" 2>&1 || true
cat "$OUT/table.txt" "$OUT/status.txt"

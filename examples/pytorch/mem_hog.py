"""Holds a fixed amount of GPU memory, then trains a tiny MLP: a job for out-of-memory checks.

    python3 mem_hog.py --gib 80 [--grow-to GIB --grow-after S] [--batch-size 256] [--steps 0]
                       [--report-every 10]

First allocates --gib GiB on the device with torch (one uint8 tensor, written once so the
memory is really in use) and keeps it; then trains like mlp_tiny.py. More than the device has
fails the allocation: torch raises its "CUDA out of memory" error and the job exits non-zero,
as a real job that does not fit would.

With --grow-to, once --grow-after seconds have passed since the script started it takes more, up
to --grow-to GiB in all, as a job whose memory grows late in training (an evaluation pass, a
longer sequence) does: a profile that ended before then records only --gib as its peak, so a
pair can pass gavel-profile's memory pre-check and still run out of memory together.

Prints "GAVEL_STEPS <cumulative steps>" (gavel-profile's default progress protocol).
"""
import argparse
import sys
import time

START = time.monotonic()

import torch

p = argparse.ArgumentParser()
p.add_argument("--gib", type=float, required=True, help="GiB of device memory to hold")
p.add_argument("--grow-to", type=float, default=0, help="GiB to hold in all after --grow-after s")
p.add_argument("--grow-after", type=float, default=0, help="seconds after the start to grow")
p.add_argument("--batch-size", type=int, default=256)
p.add_argument("--steps", type=int, default=0, help="0 = run until killed")
p.add_argument("--report-every", type=int, default=10)
args = p.parse_args()

dev = "cuda" if torch.cuda.is_available() else "cpu"
hold = torch.empty(int(args.gib * 2**30), dtype=torch.uint8, device=dev)
hold.fill_(1)  # touch it: the memory is in use, not just reserved
if dev == "cuda":
    torch.cuda.synchronize()
print(f"holding {args.gib:g} GiB on {dev}", file=sys.stderr, flush=True)

torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(512, 1024), torch.nn.ReLU(), torch.nn.Linear(1024, 10)).to(dev)
opt = torch.optim.SGD(model.parameters(), lr=0.01)
x = torch.randn(args.batch_size, 512, device=dev)
y = torch.randint(0, 10, (args.batch_size,), device=dev)
step = 0
while args.steps == 0 or step < args.steps:
    opt.zero_grad(set_to_none=True)
    torch.nn.functional.cross_entropy(model(x), y).backward()
    opt.step()
    step += 1
    if step % args.report_every == 0:
        if args.grow_to > args.gib and time.monotonic() - START >= args.grow_after:
            print(f"growing to {args.grow_to:g} GiB", file=sys.stderr, flush=True)
            more = torch.empty(int((args.grow_to - args.gib) * 2**30), dtype=torch.uint8, device=dev)
            more.fill_(1)
            hold = (hold, more)
            args.grow_to = 0
        if dev == "cuda":
            torch.cuda.synchronize()  # count steps the GPU finished, not steps queued
        print(f"GAVEL_STEPS {step}", flush=True)

"""Tiny, launch-bound MLP on synthetic data: the smallest job gavel-profile can measure.

    python3 mlp_tiny.py [--batch-size 256] [--steps 0] [--report-every 10]

Prints "GAVEL_STEPS <cumulative steps>" (gavel-profile's default progress protocol).
"""
import argparse

import torch

p = argparse.ArgumentParser()
p.add_argument("--batch-size", type=int, default=256)
p.add_argument("--steps", type=int, default=0, help="0 = run until killed")
p.add_argument("--report-every", type=int, default=10)
args = p.parse_args()

dev = "cuda" if torch.cuda.is_available() else "cpu"
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
        if dev == "cuda":
            torch.cuda.synchronize()  # count steps the GPU finished, not steps queued
        print(f"GAVEL_STEPS {step}", flush=True)

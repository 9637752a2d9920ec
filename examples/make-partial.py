#!/usr/bin/env python3
"""Writes examples/partial.json, the partly profiled table `make demo` estimates.

It is the embedded Gavel table cut down to what a user profiling a cluster
would have after Gavel's protocol (gavel-reference.md §6): 16 reference job
types measured against each other, the other single-GPU job types measured
alone and against each reference with probability 0.2, on k80, p100, v100.
Multi-GPU job types (scale factors 2, 4, 8) are kept whole.
Deterministic (seed 7). Run from the repository root.
"""
import json
import random

src = json.load(open("table/data/simulation_throughputs.json"))
rng = random.Random(7)
workers = ["k80", "p100", "v100"]
jobs = sorted(k for k in src["v100"] if k.endswith(", 1)"))
refs = set(rng.sample(jobs, 16))
out = {w: {j: {"null": src[w][j]["null"]} for j in jobs} for w in workers}
for w in workers:
    for a in jobs:
        for b in jobs:
            if a > b:
                continue
            if (a in refs and b in refs) or ((a in refs) != (b in refs) and rng.random() < 0.2):
                out[w][a][b] = src[w][a][b]
                out[w][b][a] = src[w][b][a]
for w in workers:
    for j, row in src[w].items():
        if not j.endswith(", 1)"):
            out[w][j] = row
with open("examples/partial.json", "w") as f:
    json.dump(out, f, indent=4, sort_keys=True)
    f.write("\n")

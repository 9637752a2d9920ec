"""A small Transformer language model trained on random tokens (no dataset download).

    python3 transformer_lm.py [--batch-size 16] [--seq-len 256] [--layers 4] [--dim 512]

Reports progress in its own format, "iter <n> loss <x>", to show --progress-regex:
    gavel-profile run ... --progress-regex 'iter (\\d+) ' -- python3 transformer_lm.py
"""
import argparse

import torch
import torch.nn as nn
import torch.nn.functional as F


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--batch-size", type=int, default=16)
    p.add_argument("--seq-len", type=int, default=256)
    p.add_argument("--layers", type=int, default=4)
    p.add_argument("--dim", type=int, default=512)
    p.add_argument("--heads", type=int, default=8)
    p.add_argument("--vocab", type=int, default=8192)
    p.add_argument("--steps", type=int, default=0, help="0 = run until killed")
    p.add_argument("--report-every", type=int, default=1)
    args = p.parse_args()

    dev = "cuda" if torch.cuda.is_available() else "cpu"
    torch.manual_seed(0)
    layer = nn.TransformerEncoderLayer(args.dim, args.heads, 4 * args.dim, dropout=0.0, batch_first=True, norm_first=True)
    model = nn.ModuleDict({
        "emb": nn.Embedding(args.vocab, args.dim),
        "pos": nn.Embedding(args.seq_len, args.dim),
        "enc": nn.TransformerEncoder(layer, args.layers, enable_nested_tensor=False),
        "out": nn.Linear(args.dim, args.vocab),
    }).to(dev)
    opt = torch.optim.AdamW(model.parameters(), lr=3e-4)
    mask = nn.Transformer.generate_square_subsequent_mask(args.seq_len, device=dev)
    pos = torch.arange(args.seq_len, device=dev)
    tokens = torch.randint(0, args.vocab, (args.batch_size, args.seq_len + 1), device=dev)
    step = 0
    while args.steps == 0 or step < args.steps:
        x, y = tokens[:, :-1], tokens[:, 1:]
        h = model["enc"](model["emb"](x) + model["pos"](pos), mask=mask, is_causal=True)
        loss = F.cross_entropy(model["out"](h).flatten(0, 1), y.flatten())
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        step += 1
        if step % args.report_every == 0:
            # .item() waits for the GPU, so the count is of finished steps.
            print(f"iter {step} loss {loss.item():.4f}", flush=True)


if __name__ == "__main__":
    main()

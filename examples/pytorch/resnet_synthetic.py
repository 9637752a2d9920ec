"""A small ResNet trained on synthetic 32x32 images (no dataset download).

    python3 resnet_synthetic.py [--batch-size 64] [--width 64] [--blocks 2] [--steps 0]

Prints "GAVEL_STEPS <cumulative steps>" every --report-every steps, after the GPU finished
them, and a human log line now and then (ignored by gavel-profile).
"""
import argparse
import time

import torch
import torch.nn as nn
import torch.nn.functional as F


class Block(nn.Module):
    def __init__(self, cin, cout, stride):
        super().__init__()
        self.c1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.b1 = nn.BatchNorm2d(cout)
        self.c2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.b2 = nn.BatchNorm2d(cout)
        self.skip = None
        if stride != 1 or cin != cout:
            self.skip = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))

    def forward(self, x):
        out = F.relu(self.b1(self.c1(x)))
        out = self.b2(self.c2(out))
        return F.relu(out + (x if self.skip is None else self.skip(x)))


class ResNet(nn.Module):
    def __init__(self, width, blocks, classes=10):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, width, 3, 1, 1, bias=False), nn.BatchNorm2d(width), nn.ReLU())
        layers, cin = [], width
        for i, cout in enumerate([width, 2 * width, 4 * width]):
            for b in range(blocks):
                layers.append(Block(cin, cout, 2 if (b == 0 and i > 0) else 1))
                cin = cout
        self.layers = nn.Sequential(*layers)
        self.fc = nn.Linear(cin, classes)

    def forward(self, x):
        x = self.layers(self.stem(x))
        return self.fc(F.adaptive_avg_pool2d(x, 1).flatten(1))


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--width", type=int, default=64)
    p.add_argument("--blocks", type=int, default=2)
    p.add_argument("--steps", type=int, default=0, help="0 = run until killed")
    p.add_argument("--report-every", type=int, default=1)
    p.add_argument("--amp", action="store_true", help="bfloat16 autocast on the GPU")
    args = p.parse_args()

    dev = "cuda" if torch.cuda.is_available() else "cpu"
    torch.manual_seed(0)
    model = ResNet(args.width, args.blocks).to(dev).to(memory_format=torch.channels_last)
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, weight_decay=5e-4)
    # A few fixed synthetic batches, cycled: no input pipeline in the measurement.
    data = [(torch.randn(args.batch_size, 3, 32, 32, device=dev).to(memory_format=torch.channels_last),
             torch.randint(0, 10, (args.batch_size,), device=dev)) for _ in range(4)]
    step, last_log = 0, time.time()
    while args.steps == 0 or step < args.steps:
        x, y = data[step % len(data)]
        with torch.autocast(device_type="cuda", dtype=torch.bfloat16, enabled=args.amp and dev == "cuda"):
            loss = F.cross_entropy(model(x), y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        step += 1
        if step % args.report_every == 0:
            if dev == "cuda":
                torch.cuda.synchronize()
            print(f"GAVEL_STEPS {step}", flush=True)
        if time.time() - last_log > 30:
            print(f"step {step} loss {loss.item():.3f}", flush=True)
            last_log = time.time()


if __name__ == "__main__":
    main()

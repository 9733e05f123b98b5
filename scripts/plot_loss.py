#!/usr/bin/env python3
"""Plots a `modelbin tllm train --log FILE.jsonl` log as an SVG loss curve
(training loss, smoothed, and validation loss, in bits per byte). Standard
library only.

    scripts/plot_loss.py LOG.jsonl OUT.svg [TITLE]
"""
import json
import math
import sys

W, H = 720, 420
LEFT, RIGHT, TOP, BOTTOM = 60, 20, 40, 50


def main():
    log, out = sys.argv[1], sys.argv[2]
    title = sys.argv[3] if len(sys.argv) > 3 else "TLLM training"
    rows = [json.loads(line) for line in open(log) if line.strip()]
    bits = 1 / math.log(2)
    train = [(r["step"], r["loss"] * bits) for r in rows]
    val = [(r["step"], r["val_loss"] * bits) for r in rows if "val_loss" in r]
    # Exponential moving average of the noisy per-batch loss.
    smooth, avg = [], None
    for step, value in train:
        avg = value if avg is None else 0.95 * avg + 0.05 * value
        smooth.append((step, avg))
    max_step = max(s for s, _ in train)
    values = [v for _, v in smooth + val]
    lo, hi = math.floor(min(values)), math.ceil(max(values))

    def x(step):
        return LEFT + (W - LEFT - RIGHT) * step / max_step

    def y(value):
        return TOP + (H - TOP - BOTTOM) * (hi - value) / max(hi - lo, 1e-9)

    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" font-family="sans-serif" font-size="12">',
        f'<rect width="{W}" height="{H}" fill="white"/>',
        f'<text x="{W / 2}" y="22" text-anchor="middle" font-size="15">{title}</text>',
    ]
    for tick in range(lo, hi + 1):
        parts.append(f'<line x1="{LEFT}" x2="{W - RIGHT}" y1="{y(tick):.1f}" y2="{y(tick):.1f}" stroke="#ddd"/>')
        parts.append(f'<text x="{LEFT - 8}" y="{y(tick) + 4:.1f}" text-anchor="end">{tick}</text>')
    for i in range(6):
        step = round(max_step * i / 5)
        parts.append(f'<text x="{x(step):.1f}" y="{H - BOTTOM + 18}" text-anchor="middle">{step}</text>')
    parts.append(f'<text x="{W / 2}" y="{H - 12}" text-anchor="middle">step</text>')
    parts.append(f'<text x="16" y="{H / 2}" transform="rotate(-90 16 {H / 2})" text-anchor="middle">bits per byte</text>')
    parts.append(f'<rect x="{LEFT}" y="{TOP}" width="{W - LEFT - RIGHT}" height="{H - TOP - BOTTOM}" fill="none" stroke="#444"/>')
    points = " ".join(f"{x(s):.1f},{y(v):.1f}" for s, v in smooth)
    parts.append(f'<polyline points="{points}" fill="none" stroke="#1f77b4" stroke-width="1.5"/>')
    if val:
        points = " ".join(f"{x(s):.1f},{y(v):.1f}" for s, v in val)
        parts.append(f'<polyline points="{points}" fill="none" stroke="#d62728" stroke-width="1.5" stroke-dasharray="5,3"/>')
        for s, v in val:
            parts.append(f'<circle cx="{x(s):.1f}" cy="{y(v):.1f}" r="2.5" fill="#d62728"/>')
    lx = W - RIGHT - 200
    parts.append(f'<line x1="{lx}" x2="{lx + 24}" y1="{TOP + 18}" y2="{TOP + 18}" stroke="#1f77b4" stroke-width="2"/>')
    parts.append(f'<text x="{lx + 30}" y="{TOP + 22}">train (moving average)</text>')
    parts.append(f'<line x1="{lx}" x2="{lx + 24}" y1="{TOP + 36}" y2="{TOP + 36}" stroke="#d62728" stroke-width="2" stroke-dasharray="5,3"/>')
    parts.append(f'<text x="{lx + 30}" y="{TOP + 40}">validation</text>')
    parts.append("</svg>")
    with open(out, "w") as f:
        f.write("\n".join(parts) + "\n")


if __name__ == "__main__":
    main()

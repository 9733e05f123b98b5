"""The packed f32 product against torch's `linear`, one thread, on a vision
transformer's products, each as a share of this core's FMA peak; with
`--int8`, the int8 product (weights with a scale per 32 inputs, activations
quantized per row) against torch's dynamically quantized `Linear` (fbgemm,
weights per channel, activations per tensor), as shares of the `vpdpbusd`
peak.

`kernel_bench` (crates/infer/examples) measures the peak on register
chains of the tier's width and times our products; torch runs the same
shapes in the same process run, alternating with ours, best of the repeats.

    $(scripts/heavy-venv.sh)/bin/python scripts/bench/kernel.py \\
        [--rows 1576] [--widths 384,768] [--tiers avx512,avx2] [--repeats 3]
    ... kernel.py --int8 [--tiers avx512-vnni,avx-vnni]

The default rows are a batch of 8 ViT-B/16 images at 224 px (197 tokens
each). Prints a Markdown table.
"""

import argparse
import json
import os
import subprocess
import time

import torch

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def ours(binary, int8, tier, rows, widths):
    mode = ["--int8"] if int8 else []
    out = subprocess.run([binary, *mode, tier, str(rows), *map(str, widths)],
                         check=True, capture_output=True, text=True).stdout
    return json.loads(out)


def shapes(d):
    """A ViT block's products of width `d`, as kernel_bench names them."""
    return [("qkv", 3 * d, d), ("attn_out", d, d), ("mlp_in", 4 * d, d), ("mlp_out", d, 4 * d)]


def torch_rate(m, n, k, int8):
    """Best of five timings of at least 0.2 s, in (int8) operations per
    second."""
    g = torch.Generator().manual_seed(0)
    x = torch.rand(m, k, generator=g) * 2 - 1
    w = torch.rand(n, k, generator=g) * 2 - 1
    b = torch.rand(n, generator=g)
    out = torch.empty(m, n)
    if int8:
        linear = torch.nn.Linear(k, n)
        with torch.no_grad():
            linear.weight.copy_(w)
            linear.bias.copy_(b)
        quantized = torch.ao.quantization.quantize_dynamic(
            torch.nn.Sequential(linear), {torch.nn.Linear}, dtype=torch.qint8)

        def run():
            quantized(x)
    else:
        def run():
            torch.addmm(b, x, w.t(), out=out)
    with torch.inference_mode():
        run()
        calls, started = 0, time.perf_counter()
        while time.perf_counter() - started < 0.05:
            run()
            calls += 1
        per = max(1, int(0.2 / (time.perf_counter() - started) * calls))
        best = float("inf")
        for _ in range(5):
            started = time.perf_counter()
            for _ in range(per):
                run()
            best = min(best, (time.perf_counter() - started) / per)
    return 2 * m * n * k / best


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=8 * 197)
    parser.add_argument("--widths", default="384,768")
    parser.add_argument("--tiers")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--int8", action="store_true")
    args = parser.parse_args()
    args.tiers = args.tiers or ("avx512-vnni,avx-vnni" if args.int8 else "avx512,avx2")
    unit = "GOP/s" if args.int8 else "GFLOP/s"
    widths = [int(w) for w in args.widths.split(",")]
    torch.set_num_threads(1)
    subprocess.run(["cargo", "build", "--quiet", "--release", "-p", "modelbin-infer",
                    "--example", "kernel_bench"], check=True, cwd=ROOT)
    target = os.environ.get("CARGO_TARGET_DIR", os.path.join(ROOT, "target"))
    binary = os.path.join(target, "release", "examples", "kernel_bench")

    best = {}  # (tier, width, product) -> best of ours; ("torch", width, product)
    peaks = {}
    for _ in range(args.repeats):
        for tier in args.tiers.split(","):
            report = ours(binary, args.int8, tier, args.rows, widths)
            # The int8 kernels without VNNI have no peak to measure.
            peaks[tier] = max(peaks.get(tier, 0), report["peak_gflops"] or 0)
            for p in report["products"]:
                key = (tier, p["width"], p["product"])
                if p["gflops"] > best.get(key, {"gflops": 0})["gflops"]:
                    best[key] = p
        for d in widths:
            for name, n, k in shapes(d):
                gflops = torch_rate(args.rows, n, k, args.int8) / 1e9
                best[("torch", d, name)] = max(best.get(("torch", d, name), 0), gflops)

    tiers = args.tiers.split(",")
    print(f"rows {args.rows}, one thread, best of {args.repeats}; "
          + ("vpdpbusd" if args.int8 else "FMA") + " peak "
          + ", ".join(f"{t} {peaks[t]:.1f} {unit}" for t in tiers if peaks[t]))
    print()
    header = "| width | product | m×n×k | " + " | ".join(
        f"{t} {unit} (of peak)" for t in tiers) + f" | torch {unit} (of {tiers[0]} peak) | {tiers[0]} / torch |"
    print(header)
    print("|" + "---|" * (header.count("|") - 1))
    for d in widths:
        for name, _, _ in shapes(d):
            first = best[(tiers[0], d, name)]
            cells = [f"{best[(t, d, name)]['gflops']:.1f}"
                     + (f" ({best[(t, d, name)]['of_peak']:.0%})" if peaks[t] else "")
                     for t in tiers]
            torch_gflops = best[("torch", d, name)]
            print(f"| {d} | {name} | {first['m']}×{first['n']}×{first['k']} | "
                  + " | ".join(cells)
                  + f" | {torch_gflops:.1f}"
                  + (f" ({torch_gflops / peaks[tiers[0]]:.0%})" if peaks[tiers[0]] else "")
                  + f" | {first['gflops'] / torch_gflops:.2f}× |")


if __name__ == "__main__":
    main()

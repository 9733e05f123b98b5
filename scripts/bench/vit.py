#!/usr/bin/env python3
"""Vision-transformer throughput: modelbin.vision.VisionModel against
transformers' PyTorch forward on CPU, on the same random-initialised models
and the same pixel values, in the same run.

Models (random weights, shapes of the public checkpoints): DINOv2-small
(384 wide, 12 blocks, 6 heads) and DINOv2-base (768, 12, 12), patch 14,
position embeddings for 518-pixel images interpolated to 224 (16x16
patches); CLIP ViT-B/16 and SigLIP base patch16-224 vision towers (14x14
patches). Each engine computes the hidden states of the last block of a
batch of images; torch with `torch.set_num_threads(THREADS)` under
`torch.inference_mode()` and `output_hidden_states=True`, modelbin on a
rayon pool of THREADS threads. The two alternate, best of --repeats.

Usage (heavy venv with the modelbin wheel installed, under the CPU lock):
  flock /tmp/modelbin-cpu.lock python scripts/bench/vit.py [--threads 2]
      [--batch 8] [--repeats 3] [--models dinov2-small,dinov2-base,clip-b16,siglip-b16]
Prints a Markdown table: images/s of torch and of modelbin in f32 and with
int8 linear layers (`VisionModel(path, int8=True)`), the ratios to torch,
and the largest difference of the last block's hidden states from torch's
relative to their largest magnitude.
"""

import argparse
import os
import pathlib
import sys
import tempfile
import time


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--models", default="dinov2-small,dinov2-base,clip-b16,siglip-b16")
    args = parser.parse_args()
    # The rayon pool takes its size from the environment on first use.
    os.environ["RAYON_NUM_THREADS"] = str(args.threads)

    import numpy as np
    import torch
    import transformers as tf

    from modelbin.vision import VisionModel

    torch.set_num_threads(args.threads)
    base = dict(hidden_size=768, num_hidden_layers=12, num_attention_heads=12)
    builders = {
        "dinov2-small": lambda: tf.Dinov2Model(tf.Dinov2Config(
            hidden_size=384, num_hidden_layers=12, num_attention_heads=6, patch_size=14,
            image_size=518)),
        "dinov2-base": lambda: tf.Dinov2Model(tf.Dinov2Config(
            **base, patch_size=14, image_size=518)),
        "clip-b16": lambda: tf.CLIPVisionModel(tf.CLIPVisionConfig(
            **base, intermediate_size=3072, patch_size=16, image_size=224)),
        "siglip-b16": lambda: tf.SiglipVisionModel(tf.SiglipVisionConfig(
            **base, intermediate_size=3072, patch_size=16, image_size=224)),
    }
    print(f"threads {args.threads}, batch {args.batch} images of 224x224, best of "
          f"{args.repeats}; torch {torch.__version__}, transformers {tf.__version__}",
          file=sys.stderr)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for name in args.models.split(","):
            torch.manual_seed(0)
            model = builders[name]().eval()
            path = pathlib.Path(tmp) / name
            model.save_pretrained(path, safe_serialization=True)
            ours = VisionModel(path)
            ours8 = VisionModel(path, int8=True)
            pixels = torch.randn(args.batch, 3, 224, 224,
                                 generator=torch.Generator().manual_seed(1))
            array = pixels.numpy()

            def run_torch():
                with torch.inference_mode():
                    return model(pixel_values=pixels, output_hidden_states=True).hidden_states[-1]

            def run_ours():
                return ours.hidden_states(array, [-1])[0]

            def run_ours8():
                return ours8.hidden_states(array, [-1])[0]

            theirs = run_torch().numpy()  # warm-up
            error = {}
            for engine, run in (("modelbin", run_ours), ("int8", run_ours8)):
                error[engine] = np.abs(run() - theirs).max() / np.abs(theirs).max()
            best = {"torch": float("inf"), "modelbin": float("inf"), "int8": float("inf")}
            engines = (("torch", run_torch), ("modelbin", run_ours), ("int8", run_ours8))
            for _ in range(args.repeats):
                for engine, run in engines:
                    start = time.perf_counter()
                    run()
                    best[engine] = min(best[engine], time.perf_counter() - start)
            rate = {k: args.batch / v for k, v in best.items()}
            rows.append((name, rate, error))
            print(f"{name}: " + ", ".join(f"{k} {v:.2f} img/s" for k, v in rate.items()),
                  file=sys.stderr)
    print("| model | torch f32 images/s | modelbin f32 images/s | ratio | max rel. diff. "
          "| modelbin int8 images/s | ratio | max rel. diff. |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for name, rate, error in rows:
        t = rate["torch"]
        print(f"| {name} | {t:.2f} | {rate['modelbin']:.2f} | {rate['modelbin'] / t:.2f}x "
              f"| {error['modelbin']:.1e} | {rate['int8']:.2f} | {rate['int8'] / t:.2f}x "
              f"| {error['int8']:.1e} |")


if __name__ == "__main__":
    main()

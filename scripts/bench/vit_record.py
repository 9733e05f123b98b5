#!/usr/bin/env python3
"""Recording throughput over image files: `modelbin.acts.record(images=...)`
against transformers' own pipeline on CPU, in the same run.

The images are scikit-image's sample pictures (26 files, from 172x448 to
1000x872 pixels) saved as JPEGs of quality 90, as image datasets hold them
(--originals: the PNG and JPEG files as they are), repeated --copies times
under other names. The models are random-initialised ones in the shape of public
checkpoints (scripts/demo/vision_model.py). transformers' side does what a
recording needs short of writing it: for batches of --batch files, PIL
opens each (`ImageOps.exif_transpose`), the model's PIL image processor
makes the pixel values, the model runs with `output_hidden_states=True`
under `torch.inference_mode()`, and the recorded layers' hidden states are
copied out as numpy arrays. modelbin's side is the whole recording: every
file read, hashed and checked, then decoded, resized and run, and the SAEV
dataset written and synced. The last two columns time one image's
preparation alone (decode, resize, crop, normalize), one file at a time:
PIL + the model's image processor against `ImageProcessor.pixel_values`. Both on --threads threads
(`torch.set_num_threads`, `RAYON_NUM_THREADS`), alternating, best of
--repeats.

Usage (heavy venv with the modelbin wheel installed, under the CPU lock):
  flock /tmp/modelbin-cpu.lock python scripts/bench/vit_record.py
      [--models dinov2-small,dinov2-base,clip-b16,siglip-b16] [--layers 6,-1]
Prints a Markdown table of images/s and the ratios to transformers.
"""

import argparse
import importlib.util
import os
import pathlib
import shutil
import sys
import tempfile
import time

HERE = pathlib.Path(__file__).resolve().parent


def vision_models():
    spec = importlib.util.spec_from_file_location(
        "vision_model", HERE.parent / "demo" / "vision_model.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--models", default="dinov2-small,dinov2-base,clip-b16,siglip-b16")
    parser.add_argument("--layers", default="6,-1")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--batch", type=int, default=16)
    parser.add_argument("--copies", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--originals", action="store_true",
                        help="record the sample files as they are (mostly PNG)")
    args = parser.parse_args()
    os.environ["RAYON_NUM_THREADS"] = str(args.threads)

    import skimage
    import torch
    import transformers as tf
    from PIL import Image, ImageOps

    from modelbin import acts

    torch.set_num_threads(args.threads)
    layers = [int(layer) for layer in args.layers.split(",")]
    build = vision_models().build
    samples = pathlib.Path(skimage.__file__).parent / "data"
    originals = sorted([*samples.glob("*.png"), *samples.glob("*.jpg")])
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        tmp = pathlib.Path(tmp)
        images = tmp / "images"
        images.mkdir()
        for copy in range(args.copies):
            for original in originals:
                if args.originals:
                    shutil.copy(original, images / f"{copy}-{original.name}")
                else:
                    Image.open(original).convert("RGB").save(
                        images / f"{copy}-{original.stem}.jpg", quality=90)
        files = sorted(images.iterdir())
        print(f"{len(files)} images, layers {layers}, threads {args.threads}, torch "
              f"{torch.__version__}, transformers {tf.__version__}", file=sys.stderr)
        for name in args.models.split(","):
            torch.manual_seed(0)
            model, processor = build(name)
            model.eval()
            model_dir = tmp / name
            model.save_pretrained(model_dir)
            processor.save_pretrained(model_dir)

            def run_transformers():
                for start in range(0, len(files), args.batch):
                    pictures = [ImageOps.exif_transpose(Image.open(f)).convert("RGB")
                                for f in files[start:start + args.batch]]
                    pixels = processor(images=pictures, return_tensors="pt").pixel_values
                    with torch.inference_mode():
                        states = model(pixel_values=pixels, output_hidden_states=True)
                    [states.hidden_states[layer + 1 if layer >= 0 else layer].numpy().copy()
                     for layer in layers]

            def recorder(int8):
                def run():
                    out = tmp / "acts"
                    shutil.rmtree(out, ignore_errors=True)
                    acts.record(model_dir, images=[images], out=out, layers=layers, int8=int8,
                                progress=False)
                return run

            from modelbin.vision import ImageProcessor
            ours = ImageProcessor(model_dir)

            def prepare_transformers():
                for f in files:
                    processor(images=ImageOps.exif_transpose(Image.open(f)).convert("RGB"),
                              return_tensors="np")

            def prepare_modelbin():
                for f in files:
                    ours.pixel_values([str(f)])

            engines = (("transformers", run_transformers), ("modelbin", recorder(False)),
                       ("int8", recorder(True)), ("prepare: transformers", prepare_transformers),
                       ("prepare: modelbin", prepare_modelbin))
            best = {engine: float("inf") for engine, _ in engines}
            for _ in range(args.repeats):
                for engine, run in engines:
                    start = time.perf_counter()
                    run()
                    best[engine] = min(best[engine], time.perf_counter() - start)
            rate = {engine: len(files) / seconds for engine, seconds in best.items()}
            rows.append((name, rate))
            print(f"{name}: " + ", ".join(f"{k} {v:.2f} images/s" for k, v in rate.items()),
                  file=sys.stderr)
    print("| model | transformers images/s | modelbin f32 | ratio | modelbin int8 | ratio "
          "| one image prepared, ms: PIL + processor | modelbin |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for name, rate in rows:
        t = rate["transformers"]
        print(f"| {name} | {t:.2f} | {rate['modelbin']:.2f} | {rate['modelbin'] / t:.2f}x "
              f"| {rate['int8']:.2f} | {rate['int8'] / t:.2f}x "
              f"| {1e3 / rate['prepare: transformers']:.2f} "
              f"| {1e3 / rate['prepare: modelbin']:.2f} |")


if __name__ == "__main__":
    main()

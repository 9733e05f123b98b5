#!/usr/bin/env python3
"""Writes a random-initialised vision transformer with its image processor
as a Hugging Face model directory (`save_pretrained`: config.json,
model.safetensors, preprocessor_config.json), in the shape of a public
checkpoint. No pretrained vision weights are reachable from a package
registry, so the demos and benchmarks run on these.

    vision_model.py MODEL OUT_DIR [--seed N]

MODEL: dinov2-small (384 wide, 12 blocks, patch 14, 518-pixel position
embeddings, DINOv2's processor: shortest edge 256 bicubic, crop 224),
dinov2-base (768 wide), clip-b16 (CLIP ViT-B/16 vision tower and CLIP's
processor), siglip-b16 (SigLIP base patch16-224 vision tower and its
processor). Needs torch, transformers and pillow (the heavy test venv).
"""

import argparse


def build(name: str):
    """The model and image processor named ``name``."""
    import transformers as tf

    base = dict(hidden_size=768, num_hidden_layers=12, num_attention_heads=12)
    dinov2_processor = dict(size={"shortest_edge": 256}, crop_size={"height": 224, "width": 224},
                            resample=3, image_mean=[0.485, 0.456, 0.406],
                            image_std=[0.229, 0.224, 0.225])
    if name == "dinov2-small":
        return (tf.Dinov2Model(tf.Dinov2Config(hidden_size=384, num_hidden_layers=12,
                                               num_attention_heads=6, patch_size=14,
                                               image_size=518)),
                tf.BitImageProcessorPil(**dinov2_processor))
    if name == "dinov2-base":
        return (tf.Dinov2Model(tf.Dinov2Config(**base, patch_size=14, image_size=518)),
                tf.BitImageProcessorPil(**dinov2_processor))
    if name == "clip-b16":
        return (tf.CLIPVisionModel(tf.CLIPVisionConfig(**base, intermediate_size=3072,
                                                       patch_size=16, image_size=224)),
                tf.CLIPImageProcessorPil())
    if name == "siglip-b16":
        return (tf.SiglipVisionModel(tf.SiglipVisionConfig(**base, intermediate_size=3072,
                                                           patch_size=16, image_size=224)),
                tf.SiglipImageProcessorPil())
    raise SystemExit(f"unknown model {name!r}: dinov2-small, dinov2-base, clip-b16, siglip-b16")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("model")
    parser.add_argument("out")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    import torch

    torch.manual_seed(args.seed)
    model, processor = build(args.model)
    model.eval().save_pretrained(args.out)
    processor.save_pretrained(args.out)


if __name__ == "__main__":
    main()

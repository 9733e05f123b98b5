#!/usr/bin/env bash
# The image run of docs/sae.md, end to end: a random-initialised DINOv2-small
# (scripts/demo/vision_model.py; no pretrained vision weights are reachable
# from a package registry) records scikit-image's 26 sample pictures, a TopK
# autoencoder is trained on the last block's patches, and the feature page is
# written. Needs the heavy test venv (scripts/heavy-venv.sh) for transformers
# and scikit-image, and the release build. Everything goes to target/demo/.
set -euo pipefail
cd "$(dirname "$0")/../.."
python=$(scripts/heavy-venv.sh)/bin/python
modelbin=target/release/modelbin
out=target/demo
rm -rf "$out/dinov2-small" "$out/images" "$out/acts" "$out/sae-images"
mkdir -p "$out/images"
"$python" scripts/demo/vision_model.py dinov2-small "$out/dinov2-small" 2>/dev/null
samples=$("$python" -c 'import pathlib, skimage; print(pathlib.Path(skimage.__file__).parent / "data")')
cp "$samples"/*.png "$samples"/*.jpg "$out/images/"
set -x
$modelbin acts record -m "$out/dinov2-small" --images "$out/images" --layers 6,-1 -o "$out/acts"
dataset=$(ls -d "$out"/acts/*/)
$modelbin acts verify "$dataset"
$modelbin sae train "$dataset" --layer -1 --d-sae 1536 -k 16 --steps 400 --batch-size 512 -o "$out/sae-images"
$modelbin sae eval "$out/sae-images" "$dataset" --layer -1
$modelbin sae features "$out/sae-images" "$dataset" --layer -1 --latents 4 --html "$out/features-images.html"

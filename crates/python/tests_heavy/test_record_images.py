"""Recording vision transformers over image files, end to end against the
real parts: random-initialised DINOv2 (with and without registers), CLIP and
SigLIP models and their PIL image processors made by transformers, over
scikit-image's sample images (PNGs, and JPEGs of several kinds); the
recorded vectors equal transformers' ``hidden_states`` of its own
``pixel_values``, read back by modelbin and by
saev's own reader (saev 0.1.0's ``activations.Dataset``); the dataset
verifies, trains an autoencoder, and its feature page draws heat maps over
the images."""

import json
import pathlib
import re
import shutil

import numpy as np
import pytest
import saev.activations
import saev.config
import skimage
import torch
import transformers as tf
from PIL import Image, ImageOps

import modelbin
from modelbin import acts, sae
from modelbin import saev as msaev

SAMPLES = pathlib.Path(skimage.__file__).parent / "data"
# Colour, grey (camera), RGBA (logo) and an odd aspect ratio (text).
PNGS = ["astronaut.png", "camera.png", "chelsea.png", "logo.png", "text.png"]
LAYERS = [0, -1]


def make_model(family: str, out: pathlib.Path):
    """A small model of ``family`` and its image processor, saved to
    ``out``; the transformers model, in eval mode."""
    torch.manual_seed(7)
    small = dict(hidden_size=48, num_hidden_layers=3, num_attention_heads=4)
    # DINOv2's position embeddings are for 98-pixel images (7×7 patches),
    # interpolated to the 56-pixel crop (4×4), as for the public checkpoints.
    dinov2 = tf.BitImageProcessorPil(size={"shortest_edge": 64},
                                     crop_size={"height": 56, "width": 56})
    model, processor = {
        "dinov2": lambda: (tf.Dinov2Model(tf.Dinov2Config(**small, patch_size=14, image_size=98)),
                           dinov2),
        "dinov2-registers": lambda: (tf.Dinov2WithRegistersModel(tf.Dinov2WithRegistersConfig(
            **small, patch_size=14, image_size=98, num_register_tokens=2)), dinov2),
        "clip": lambda: (tf.CLIPVisionModel(tf.CLIPVisionConfig(
            **small, intermediate_size=96, patch_size=16, image_size=64)),
            tf.CLIPImageProcessorPil(size={"shortest_edge": 64},
                                     crop_size={"height": 64, "width": 64})),
        "siglip": lambda: (tf.SiglipVisionModel(tf.SiglipVisionConfig(
            **small, intermediate_size=96, patch_size=16, image_size=64)),
            tf.SiglipImageProcessorPil(size={"height": 64, "width": 64})),
    }[family]()
    model.eval().save_pretrained(out)
    processor.save_pretrained(out)
    return model, processor


def copy_images(out: pathlib.Path) -> list:
    out.mkdir()
    for name in PNGS:
        shutil.copy(SAMPLES / name, out / name)
    return sorted(out / name for name in PNGS)


def make_jpegs(out: pathlib.Path) -> list:
    """JPEGs as datasets hold them: scikit-image's baseline 4:2:0 photo, a
    progressive one, a greyscale one and a 4:4:4 one with an EXIF
    rotation."""
    out.mkdir()
    shutil.copy(SAMPLES / "rocket.jpg", out / "rocket.jpg")
    Image.open(SAMPLES / "chelsea.png").save(out / "chelsea-progressive.jpg", quality=85,
                                              progressive=True)
    Image.open(SAMPLES / "camera.png").save(out / "camera-grey.jpg", quality=90)
    exif = Image.Exif()
    exif[0x0112] = 8  # orientation: rotate 90° counter-clockwise to view
    Image.open(SAMPLES / "astronaut.png").save(out / "astronaut-rotated.jpg", quality=95,
                                                subsampling=0, exif=exif.tobytes())
    return sorted(out.iterdir())


def reference_states(model, processor, files) -> list:
    """transformers' hidden states after each of LAYERS, ``[n, tokens, d]``,
    of its processor's pixel values of ``files``."""
    pictures = [ImageOps.exif_transpose(Image.open(f)) for f in files]
    pixels = processor(images=pictures, return_tensors="pt").pixel_values
    with torch.no_grad():
        states = model(pixel_values=pixels, output_hidden_states=True).hidden_states
    return [states[layer + 1 if layer >= 0 else layer].numpy() for layer in LAYERS]


def as_saev_0_1(dataset: pathlib.Path, out: pathlib.Path) -> str:
    """The dataset as saev 0.1.0 (the release on PyPI, older than protocol
    v1) names it: the same shards, the metadata key ``max_patches_per_shard``
    under its earlier name ``n_patches_per_shard``."""
    out.mkdir()
    metadata = json.loads((dataset / "metadata.json").read_text())
    metadata["n_patches_per_shard"] = metadata.pop("max_patches_per_shard")
    (out / "metadata.json").write_text(json.dumps(metadata))
    for shard in dataset.glob("acts*.bin"):
        (out / shard.name).symlink_to(shard)
    return str(out)


def worst_relative(ours: np.ndarray, theirs: np.ndarray) -> float:
    return float(np.abs(ours - theirs).max() / np.abs(theirs).max())


@pytest.mark.parametrize("family,kind", [("dinov2", "png"), ("dinov2-registers", "png"),
                                         ("clip", "png"), ("siglip", "png"),
                                         ("dinov2", "jpeg"), ("clip", "jpeg")])
def test_recorded_images_equal_transformers_hidden_states(tmp_path, family, kind):
    model, processor = make_model(family, tmp_path / "model")
    files = (copy_images if kind == "png" else make_jpegs)(tmp_path / "images")
    path = acts.record(tmp_path / "model", images=[tmp_path / "images"], out=tmp_path / "acts",
                       layers=LAYERS, progress=False)
    registers = 2 if family == "dinov2-registers" else 0
    cls = family != "siglip"
    expected = [np.concatenate([s[:, :1], s[:, 1 + registers:]], axis=1) if cls else s
                for s in reference_states(model, processor, files)]
    n, tokens, d = expected[0].shape

    metadata = json.loads((pathlib.Path(path) / "metadata.json").read_text())
    assert metadata["vit_family"] == family.split("-")[0]
    assert (metadata["cls_token"], metadata["n_patches_per_img"], metadata["d_vit"],
            metadata["n_imgs"]) == (cls, tokens - cls, d, len(files))
    assert isinstance(metadata["data"], str)
    listed = [json.loads(line) for line in (pathlib.Path(path) / "images.jsonl").open()]
    assert [entry["path"] for entry in listed] == [str(f) for f in files]

    dataset = msaev.Dataset(path)
    for index, layer in enumerate(LAYERS):
        ours = np.stack([[dataset.get(img, layer, token) for token in range(tokens)]
                         for img in range(n)])
        assert worst_relative(ours, expected[index]) <= 1e-4, (family, layer)

    if cls:
        # saev 0.1.0's reader assumes a CLS token (it reads n_patches_per_img + 1
        # tokens per image), so it opens the datasets of DINOv2 and CLIP.
        legacy = as_saev_0_1(pathlib.Path(path), tmp_path / "saev-0.1.0")
        for index, layer in enumerate(LAYERS):
            config = saev.config.DataLoad(shard_root=legacy, patches="patches", layer=layer,
                                          scale_mean=False, scale_norm=False)
            theirs = saev.activations.Dataset(config)
            assert len(theirs) == n * (tokens - 1)
            read = np.zeros((n, tokens - 1, d), np.float32)
            for i in range(len(theirs)):
                example = theirs[i]
                read[example["image_i"], example["patch_i"]] = example["act"].numpy()
            assert worst_relative(read, expected[index][:, 1:]) <= 1e-4, (family, layer)
            cls_rows = saev.activations.Dataset(saev.config.DataLoad(
                shard_root=legacy, patches="cls", layer=layer, scale_mean=False,
                scale_norm=False))
            read_cls = np.stack([cls_rows[i]["act"].numpy() for i in range(n)])
            assert worst_relative(read_cls, expected[index][:, 0]) <= 1e-4, (family, layer)


def test_an_image_dataset_verifies_trains_and_shows_heat_maps(tmp_path):
    make_model("dinov2", tmp_path / "model")
    copy_images(tmp_path / "images")
    (tmp_path / "images" / "broken.png").write_bytes(b"\x89PNG\r\n\x1a\n truncated")
    with pytest.warns(UserWarning, match=r"skipped .*broken\.png"):
        path = acts.record(tmp_path / "model", images=[tmp_path / "images"],
                           out=tmp_path / "acts", layers=[-1], progress=False)
    with pytest.raises(ValueError, match=r"broken\.png"):
        acts.record(tmp_path / "model", images=[tmp_path / "images"], out=tmp_path / "strict",
                    layers=[-1], strict=True, progress=False)
    modelbin.verify(path)
    assert len(msaev.Dataset(path, layer=-1)) == len(PNGS) * 16  # patches, without CLS

    trained = sae.train(path, layer=-1, out=tmp_path / "sae", d_sae=64, k=4, steps=40,
                        batch_size=32, progress=False)
    page = tmp_path / "features.html"
    found = sae.features(trained, path, layer=-1, latents=8, html=page, progress=False)
    assert found and all(f["top"] for f in found if f["density"] > 0)
    html = page.read_text()
    thumbnails = re.findall(r"data:image/jpeg;base64,", html)
    assert 1 <= len(thumbnails) <= len(PNGS)

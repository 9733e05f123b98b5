"""modelbin.vision.ImageProcessor against transformers' own image processors
(the PIL ones, and what AutoImageProcessor loads from the same directory):
the configuration is the file their save_pretrained writes, the images
scikit-image's sample files plus made ones (EXIF-rotated JPEG, 16-bit and
RGBA PNGs, an odd aspect ratio, one smaller than the crop). transformers is given
ImageOps.exif_transpose(Image.open(path)), as its load_image turns images
upright. JPEGs of every kind PIL writes decode to PIL's pixels."""

import struct
import zlib

import numpy as np
import pytest
import skimage
from PIL import Image, ImageOps
from transformers import (
    AutoImageProcessor,
    BitImageProcessorPil,
    CLIPImageProcessorPil,
    SiglipImageProcessorPil,
)

from modelbin.vision import ImageProcessor

SAMPLES = ["astronaut.png", "chelsea.png", "rocket.jpg", "camera.png", "logo.png", "text.png"]

FAMILIES = {
    # DINOv2's own settings: shortest edge 256, crop 224.
    "dinov2": lambda **kw: BitImageProcessorPil(size={"shortest_edge": 256}, **kw),
    "clip": lambda **kw: CLIPImageProcessorPil(**kw),
    "siglip": lambda **kw: SiglipImageProcessorPil(**kw),
}


def png16(samples):
    """A 16-bit PNG of `samples` (uint16 [H, W] or [H, W, C]), which PIL
    cannot write."""
    a = np.asarray(samples, dtype=">u2")
    if a.ndim == 2:
        a = a[..., None]
    height, width, channels = a.shape
    colour_type = {1: 0, 2: 4, 3: 2, 4: 6}[channels]
    raw = b"".join(b"\x00" + a[y].tobytes() for y in range(height))

    def chunk(kind, data):
        return (struct.pack(">I", len(data)) + kind + data
                + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF))

    header = struct.pack(">IIBBBBB", width, height, 16, colour_type, 0, 0, 0)
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(raw))
            + chunk(b"IEND", b""))


@pytest.fixture(scope="module")
def images(tmp_path_factory):
    """name -> path of each test image."""
    out = tmp_path_factory.mktemp("images")
    data = skimage.data.data_dir
    paths = {name: f"{data}/{name}" for name in SAMPLES}

    chelsea = Image.open(paths["chelsea.png"])
    exif = Image.Exif()
    exif[0x0112] = 6  # orientation: rotate 90° clockwise to view
    chelsea.save(out / "rotated.jpg", quality=90, exif=exif.tobytes())
    paths["rotated.jpg"] = str(out / "rotated.jpg")

    astronaut = np.asarray(Image.open(paths["astronaut.png"]))
    Image.fromarray(astronaut[200:240, :]).save(out / "strip.png")  # 40×512
    paths["strip.png"] = str(out / "strip.png")
    Image.fromarray(astronaut[100:170, 150:260]).save(out / "small.png")  # 70×110
    paths["small.png"] = str(out / "small.png")

    # Alpha that varies smoothly, so every compositing weight occurs.
    rgba = np.dstack([astronaut[:256, :256], np.tile(np.arange(256, dtype=np.uint8), (256, 1))])
    Image.fromarray(rgba, "RGBA").save(out / "alpha.png")
    paths["alpha.png"] = str(out / "alpha.png")

    rng = np.random.default_rng(0)
    wide = astronaut[:300, :].astype(np.uint16) * 257 + rng.integers(0, 257, (300, 512, 3),
                                                                      dtype=np.uint16)
    (out / "rgb16.png").write_bytes(png16(wide))
    paths["rgb16.png"] = str(out / "rgb16.png")
    # 16-bit grey with values below and above 255 (PIL clips the latter).
    grey16 = np.asarray(Image.open(paths["camera.png"])).astype(np.uint16) * 2
    (out / "grey16.png").write_bytes(png16(grey16))
    paths["grey16.png"] = str(out / "grey16.png")
    return paths


def reference(processor, path, **kwargs):
    image = ImageOps.exif_transpose(Image.open(path))
    return processor(image, return_tensors="np", **kwargs)["pixel_values"][0]


@pytest.fixture(scope="module", params=list(FAMILIES))
def family(request, tmp_path_factory):
    """(name, transformers processor, directory its save_pretrained wrote)."""
    directory = tmp_path_factory.mktemp(request.param)
    theirs = FAMILIES[request.param]()
    theirs.save_pretrained(directory)
    return request.param, theirs, directory


def differences(family, images):
    """{image: (ours rescaled, theirs rescaled, ours normalized, theirs
    normalized, AutoImageProcessor's normalized)}."""
    _, theirs, directory = family
    ours = ImageProcessor(directory)
    auto = AutoImageProcessor.from_pretrained(directory)
    paths = list(images.values())
    rescaled = ours.pixel_values(paths, normalize=False)
    normalized = ours.pixel_values(paths)
    assert rescaled.dtype == np.float32 and rescaled.shape == (len(paths), 3, *ours.size)
    return {image: (rescaled[i], reference(theirs, path, do_normalize=False), normalized[i],
                    reference(theirs, path), reference(auto, path))
            for i, (image, path) in enumerate(images.items())}


def test_pixel_values_equal_transformers(family, images):
    name, theirs, _ = family
    std = np.asarray(theirs.image_std, dtype=np.float32)[:, None, None]
    worst = {}
    for image, (ours, want, ours_normalized, want_normalized, auto) in differences(
            family, images).items():
        assert ours.shape == want.shape
        worst[image] = round(float(np.abs(ours - want).max()) * 255, 2)
        # PNGs and JPEGs alike: the same pixels as PIL, to the last bit.
        np.testing.assert_array_equal(ours, want, err_msg=f"{name} {image}")
        np.testing.assert_allclose(ours_normalized, want_normalized, rtol=0, atol=1e-5,
                                   err_msg=f"{name} {image}")
        # AutoImageProcessor's default is the torchvision processor when
        # torchvision is installed (the heavy test venv has it for saev), whose
        # antialiased resize is not PIL's: within the 2/255 of it,
        # beyond the decoders' gap.
        np.testing.assert_allclose(
            ours_normalized, auto, rtol=0,
            atol=2 / 255 / std.min() + 1e-5,
            err_msg=f"{name} {image} ({type(AutoImageProcessor.from_pretrained(family[2])).__name__})")
    print(f"\n{name}: max |ours - transformers| per image, in 1/255: {worst}")


def jpeg_kinds(out):
    """name -> path of a JPEG of each kind PIL writes: baseline and
    progressive at 4:4:4, 4:2:2 and 4:2:0 chroma subsampling, greyscale,
    CMYK and quality 100; sides that are not whole MCUs."""
    photo = Image.open(f"{skimage.data.data_dir}/astronaut.png").resize((333, 251))
    paths = {}
    for subsampling, name in [(0, "444"), (1, "422"), (2, "420")]:
        for progressive in (False, True):
            path = out / f"{name}{'-progressive' if progressive else ''}.jpg"
            photo.save(path, quality=87, subsampling=subsampling, progressive=progressive)
            paths[path.name] = path
    for name, image, options in [("grey.jpg", photo.convert("L"), {}),
                                 ("grey-progressive.jpg", photo.convert("L"),
                                  {"progressive": True}),
                                 ("cmyk.jpg", photo.convert("CMYK"), {}),
                                 ("q100.jpg", photo, {"quality": 100})]:
        image.save(out / name, **{"quality": 90, **options})
        paths[name] = out / name
    return paths


def test_jpegs_decode_to_pils_pixels(tmp_path, images):
    """The decoded image itself (no resize, a crop of its own size) equals
    PIL's exif_transpose(Image.open(path)).convert("RGB")."""
    paths = jpeg_kinds(tmp_path)
    paths.update({name: images[name] for name in ("rocket.jpg", "rotated.jpg")})
    for name, path in paths.items():
        want = np.asarray(ImageOps.exif_transpose(Image.open(path)).convert("RGB"))
        height, width = want.shape[:2]
        directory = tmp_path / f"processor-{name}"
        BitImageProcessorPil(do_resize=False, do_normalize=False,
                             crop_size={"height": height, "width": width}).save_pretrained(directory)
        np.testing.assert_array_equal(ImageProcessor(directory).model_view(str(path)), want,
                                      err_msg=name)


def test_model_view_is_the_rescaled_pixels(family, images):
    _, _, directory = family
    ours = ImageProcessor(directory)
    view = ours.model_view(images["chelsea.png"])
    assert view.dtype == np.uint8 and view.shape == (*ours.size, 3)
    rescaled = ours.pixel_values([images["chelsea.png"]], normalize=False)[0]
    # Rescaled as transformers rescales: in float64, kept as float32.
    want = (np.moveaxis(view, -1, 0).astype(np.float64) * (1 / 255)).astype(np.float32)
    np.testing.assert_array_equal(rescaled, want)


def test_bytes_and_paths_give_the_same_values(family, images):
    _, _, directory = family
    ours = ImageProcessor(directory)
    path = images["rocket.jpg"]
    with open(path, "rb") as f:
        data = f.read()
    np.testing.assert_array_equal(ours.pixel_values([data]), ours.pixel_values([path]))


@pytest.mark.parametrize("resample", [0, 1, 2, 3, 4, 5])
def test_each_supported_filter_equals_pil(tmp_path, images, resample):
    theirs = CLIPImageProcessorPil(resample=resample)
    theirs.save_pretrained(tmp_path)
    ours = ImageProcessor(tmp_path)
    # Taller than twice its width: Pillow 13 resamples its columns first.
    astronaut = Image.open(images["astronaut.png"]).resize((250, 600))
    astronaut.save(tmp_path / "tall.png")
    paths = {**images, "tall.png": str(tmp_path / "tall.png")}
    for image in ("chelsea.png", "strip.png", "tall.png"):
        got = ours.pixel_values([paths[image]], normalize=False)[0]
        want = reference(theirs, paths[image], do_normalize=False)
        np.testing.assert_array_equal(got, want, err_msg=f"resample {resample} {image}")


def test_an_image_smaller_than_the_crop_is_padded_as_transformers_pads_it(tmp_path, images):
    theirs = BitImageProcessorPil(do_resize=False, crop_size={"height": 101, "width": 96})
    theirs.save_pretrained(tmp_path)
    ours = ImageProcessor(tmp_path)
    for image in ("small.png", "strip.png"):
        got = ours.pixel_values([images[image]], normalize=False)[0]
        # No resampling: the crop and padding are exact.
        np.testing.assert_array_equal(got, reference(theirs, images[image], do_normalize=False))


def test_unsupported_settings_and_bad_images_raise(tmp_path, images):
    with pytest.raises(FileNotFoundError, match="preprocessor_config.json"):
        ImageProcessor(tmp_path)
    BitImageProcessorPil(resample=7).save_pretrained(tmp_path)
    with pytest.raises(ValueError, match="resample 7 is not a PIL filter"):
        ImageProcessor(tmp_path)
    (tmp_path / "ok").mkdir()
    CLIPImageProcessorPil().save_pretrained(tmp_path / "ok")
    ours = ImageProcessor(tmp_path / "ok")
    truncated = tmp_path / "truncated.jpg"
    truncated.write_bytes(open(images["rocket.jpg"], "rb").read()[:2000])
    with pytest.raises(ValueError, match="truncated.jpg"):
        ours.pixel_values([images["chelsea.png"], str(truncated)])
    with pytest.raises(ValueError, match="image 0 \\(bytes\\)"):
        ours.pixel_values([b"not an image"])
    with pytest.raises(FileNotFoundError, match="missing.png"):
        ours.model_view(tmp_path / "missing.png")

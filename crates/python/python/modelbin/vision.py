"""Vision transformers (DINOv2, CLIP's and SigLIP's vision towers) and
their inputs.

:class:`VisionModel` runs a model on pixel values, giving each layer's
hidden states as transformers' ``output_hidden_states`` does.
:class:`ImageProcessor` reads a model directory's
``preprocessor_config.json`` (DINOv2's ``BitImageProcessor``, CLIP's and
SigLIP's processors, or any with the same keys) and turns JPEG and PNG
images into ``pixel_values`` equal to transformers' PIL image processor's
for ``ImageOps.exif_transpose(Image.open(path))``.
"""

from __future__ import annotations

import os
from typing import Any, List, Sequence, Tuple, Union

import numpy as np
import numpy.typing as npt

from . import _native

__all__ = ["ImageInput", "ImageProcessor", "VisionModel"]


class VisionModel:
    """A vision transformer loaded from a Hugging Face model directory
    (``config.json`` and ``model.safetensors`` as ``save_pretrained`` writes
    them): ``Dinov2Model``, ``Dinov2WithRegistersModel``,
    ``CLIPVisionModel`` or ``SiglipVisionModel``, or the vision tower of a
    full ``CLIPModel`` / ``SiglipModel``. F16 and BF16 weights are widened
    to float32. ``int8=True`` quantizes the blocks' linear layers to int8
    (a scale per 32 inputs of each weight row; inputs quantized row by row
    as they come): faster, with hidden states about a percent from the
    float32 model's. Thread-safe; pickles by path and options."""

    def __init__(self, path: Union[str, "os.PathLike[str]"], *, int8: bool = False) -> None:
        self._path = os.fspath(path)
        self._native = _native.NativeVisionModel(self._path, int8)

    def __reduce__(self) -> Tuple[Any, Tuple[Any, ...]]:
        return (_reopen, (self._path, self.int8))

    def __repr__(self) -> str:
        return (f"VisionModel({self._path!r}, family={self.family!r}, "
                f"blocks={self.blocks}, width={self.width})")

    @property
    def int8(self) -> bool:
        """Whether the blocks' linear layers run on int8 weights."""
        return self._native.int8

    @property
    def family(self) -> str:
        """``"dinov2"``, ``"clip"`` or ``"siglip"`` (saev's ``vit_family``)."""
        return self._native.family

    @property
    def blocks(self) -> int:
        """Transformer blocks (layers)."""
        return self._native.blocks

    @property
    def width(self) -> int:
        """Width of the hidden states (``hidden_size``)."""
        return self._native.width

    @property
    def patch_size(self) -> int:
        """Side of the square patches, in pixels."""
        return self._native.patch_size

    @property
    def has_cls(self) -> bool:
        """Whether a CLS token leads each image's tokens (DINOv2 and CLIP,
        not SigLIP)."""
        return self._native.has_cls

    @property
    def registers(self) -> int:
        """Register tokens after the CLS token (DINOv2 with registers)."""
        return self._native.registers

    @property
    def image_size(self) -> Tuple[int, int]:
        """The configuration's image size, ``(height, width)``."""
        return self._native.image_size

    def patch_grid(self, height: int, width: int) -> Tuple[int, int]:
        """The patch grid ``(rows, columns)`` of ``height × width`` images;
        ``ValueError`` for a size the model cannot take (sides not
        multiples of the patch size; for CLIP and SigLIP, any size but the
        configuration's)."""
        return self._native.patch_grid(height, width)

    def hidden_states(self, pixel_values: npt.ArrayLike,
                      layers: Sequence[int]) -> List[npt.NDArray[np.float32]]:
        """The hidden states after each of ``layers`` (block indices from 0;
        negative ones count from the end, ``-1`` the last) of normalized
        ``pixel_values`` ``[n, 3, height, width]`` (as an image processor
        gives them): one float32 array ``[n, tokens, width]`` per layer, in
        the order asked, equal to transformers' ``hidden_states[layer + 1]``
        (no final LayerNorm). Tokens are the CLS token (if any), the
        register tokens, then the patches row by row. Runs on all cores
        with the GIL released."""
        pixels = np.ascontiguousarray(pixel_values, dtype=np.float32)
        if pixels.ndim != 4:
            raise ValueError(f"pixel_values must be [n, 3, height, width], not shape {pixels.shape}")
        return self._native.hidden_states(pixels, [int(layer) for layer in layers])


def _reopen(path: str, int8: bool) -> VisionModel:
    return VisionModel(path, int8=int8)


#: An image: a file's path, or the bytes of a JPEG or PNG file.
ImageInput = Union[str, "os.PathLike[str]", bytes]


def _source(image: ImageInput) -> Union[str, bytes]:
    if isinstance(image, (bytes, bytearray, memoryview)):
        return bytes(image)
    return os.fspath(image)


class ImageProcessor:
    """The image processor of the vision model in ``model_dir``.

    Images are turned upright as their EXIF orientation says, converted to
    RGB (grey replicated, transparency composited on white), resized, center
    cropped, rescaled and normalized as the configuration says. A missing
    ``preprocessor_config.json`` raises ``FileNotFoundError``; a setting
    that changes the pixels in a way not supported (``do_pad``, a ``BOX`` or
    ``HAMMING`` filter...) and a corrupt, truncated or unsupported image raise
    ``ValueError`` naming it.
    """

    def __init__(self, model_dir: Union[str, "os.PathLike[str]"]) -> None:
        self._model_dir = os.fspath(model_dir)
        self._native = _native.NativeImageProcessor(self._model_dir)

    def __reduce__(self):
        return (ImageProcessor, (self._model_dir,))

    def __repr__(self) -> str:
        return f"ImageProcessor({self._model_dir!r}, size={self.size})"

    @property
    def size(self) -> Tuple[int, int]:
        """``(height, width)`` of the processed images."""
        return self._native.size

    def pixel_values(self, images: Sequence[ImageInput], normalize: bool = True) -> np.ndarray:
        """float32 ``[len(images), 3, height, width]``: transformers'
        ``pixel_values``; with ``normalize=False`` the values after rescaling
        only (in ``[0, 1]`` for the usual ``rescale_factor``). The images are
        decoded in parallel, without the GIL."""
        if isinstance(images, (str, bytes, bytearray, memoryview, os.PathLike)):
            raise TypeError("images is a sequence of paths or bytes; wrap a single image in a list")
        return self._native.pixel_values([_source(image) for image in images], normalize)

    def model_view(self, image: ImageInput) -> np.ndarray:
        """uint8 ``[height, width, 3]``: the image the model sees, after the
        resize and crop (before rescaling)."""
        return self._native.model_view(_source(image))


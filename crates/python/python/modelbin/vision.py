"""Vision transformers' inputs, as Hugging Face's image processors make them.

:class:`ImageProcessor` reads a model directory's
``preprocessor_config.json`` (DINOv2's ``BitImageProcessor``, CLIP's and
SigLIP's processors, or any with the same keys) and turns JPEG and PNG
images into ``pixel_values`` equal to transformers' PIL image processor's
for ``ImageOps.exif_transpose(Image.open(path))``.
"""

from __future__ import annotations

import os
from typing import Sequence, Tuple, Union

import numpy as np

from . import _native

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


__all__ = ["ImageInput", "ImageProcessor"]

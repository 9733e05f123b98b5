"""Vision transformers (DINOv2, CLIP's and SigLIP's vision towers) run on
pixel values, giving each layer's hidden states as transformers'
``output_hidden_states`` does."""

from __future__ import annotations

import os
from typing import Any, List, Sequence, Tuple, Union

import numpy as np
import numpy.typing as npt

from . import _native

__all__ = ["VisionModel"]


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

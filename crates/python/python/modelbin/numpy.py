"""``safetensors.numpy``-style functions over modelbin's formats.

``load_file`` reads BinTensors, safetensors, EMBD and TLLM files (detected
by content); ``save_file`` writes ``.bt`` (byte-identical to the
``bintensors`` crate's writer) or ``.safetensors``, chosen by extension.
BF16 and the 8-bit floats are ``ml_dtypes`` arrays, so ``load_file`` then
``save_file`` gives back the same bytes.
"""

from __future__ import annotations

import os
from typing import Dict, List, Optional

import numpy as np

from . import _native
from .tensors import DTYPE_NAMES, Entry, array_of, safe_open, write_file


def _entries(tensors: Dict[str, np.ndarray]) -> List[Entry]:
    entries = []
    for name, array in tensors.items():
        if not isinstance(name, str):
            raise TypeError(f"tensor names are strings, got {type(name).__name__}")
        array = np.asarray(array)
        dtype = array.dtype.newbyteorder("<") if array.dtype.byteorder == ">" else array.dtype
        if dtype.kind == "b":
            dtype = np.dtype(np.bool_)
        if dtype not in DTYPE_NAMES:
            raise ValueError(f"tensor {name!r}: numpy dtype {array.dtype} has no tensor dtype")
        data = np.ascontiguousarray(array, dtype=dtype).tobytes()
        entries.append((name, DTYPE_NAMES[dtype], list(array.shape), data))
    return entries


def load_file(filename: "str | os.PathLike[str]") -> Dict[str, np.ndarray]:
    """Every tensor of a file, by name (read-only arrays over the mapped
    file)."""
    with safe_open(filename, framework="np") as f:
        return {name: f.get_tensor(name) for name in f.keys()}


def save_file(tensors: Dict[str, np.ndarray], filename: "str | os.PathLike[str]",
              metadata: Optional[Dict[str, str]] = None) -> None:
    """Writes ``tensors`` atomically; the format is the extension's
    (``.bt``/``.bintensors`` or ``.safetensors``)."""
    write_file(_entries(tensors), filename, metadata)


def save(tensors: Dict[str, np.ndarray], metadata: Optional[Dict[str, str]] = None, *,
         format: str = "safetensors") -> bytes:
    """The bytes of a file of ``tensors`` (``format``: safetensors or bintensors)."""
    return _native.serialize(format, _entries(tensors), metadata, None)


def load(data: bytes) -> Dict[str, np.ndarray]:
    """Every tensor of a file's bytes (read-only views of ``data``)."""
    _, entries, _ = _native.tensor_table_of_bytes(data)
    return {name: array_of(data, dtype, shape, offset, nbytes)
            for name, dtype, shape, offset, nbytes in entries}

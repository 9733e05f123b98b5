"""``safetensors.numpy``-style functions over modelbin's formats.

``load_file`` reads BinTensors, safetensors, EMBD and TLLM files (detected
by content); ``save_file`` writes ``.bt`` (byte-identical to the
``bintensors`` crate's writer) or ``.safetensors``, chosen by extension.
"""

from __future__ import annotations

import os
from typing import Dict, List, Optional, Tuple

import numpy as np

from . import _native
from .tensors import NUMPY_DTYPES, array_of, safe_open

_DTYPE_NAMES = {dtype: name for name, dtype in NUMPY_DTYPES.items()}

_EXTENSIONS = {".bt": "bintensors", ".bintensors": "bintensors", ".safetensors": "safetensors"}


def _entries(tensors: Dict[str, np.ndarray]) -> List[Tuple[str, str, List[int], bytes]]:
    entries = []
    for name, array in tensors.items():
        if not isinstance(name, str):
            raise TypeError(f"tensor names are strings, got {type(name).__name__}")
        array = np.asarray(array)
        dtype = array.dtype.newbyteorder("<") if array.dtype.byteorder == ">" else array.dtype
        if dtype.kind == "b":
            dtype = np.dtype(np.bool_)
        if dtype not in _DTYPE_NAMES:
            raise ValueError(f"tensor {name!r}: numpy dtype {array.dtype} has no tensor dtype")
        data = np.ascontiguousarray(array, dtype=dtype).tobytes()
        entries.append((name, _DTYPE_NAMES[dtype], list(array.shape), data))
    return entries


def load_file(filename: "str | os.PathLike[str]") -> Dict[str, np.ndarray]:
    """Every tensor of a file, by name (read-only arrays over the mapped
    file; BF16 and 8-bit floats decoded to float32)."""
    with safe_open(filename, framework="np") as f:
        return {name: f.get_tensor(name) for name in f.keys()}


def save_file(tensors: Dict[str, np.ndarray], filename: "str | os.PathLike[str]",
              metadata: Optional[Dict[str, str]] = None) -> None:
    """Writes ``tensors`` atomically; the format is the extension's
    (``.bt``/``.bintensors`` or ``.safetensors``)."""
    path = os.fspath(filename)
    extension = os.path.splitext(path)[1].lower()
    if extension not in _EXTENSIONS:
        raise ValueError(f"{path}: the extension must be .bt, .bintensors or .safetensors")
    _native.serialize(_EXTENSIONS[extension], _entries(tensors), metadata, path)


def save(tensors: Dict[str, np.ndarray], metadata: Optional[Dict[str, str]] = None, *,
         format: str = "safetensors") -> bytes:
    """The bytes of a file of ``tensors`` (``format``: safetensors or bintensors)."""
    return _native.serialize(format, _entries(tensors), metadata, None)


def load(data: bytes) -> Dict[str, np.ndarray]:
    """Every tensor of a file's bytes (views of ``data`` where numpy has the
    dtype)."""
    _, entries, _ = _native.tensor_table_of_bytes(data)
    return {name: array_of(data, dtype, shape, offset, nbytes)
            for name, dtype, shape, offset, nbytes in entries}

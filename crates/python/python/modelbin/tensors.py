"""Tensor files as numpy arrays: ``safe_open`` (as safetensors has it).

The file is validated by the Rust reader, then mapped read-only; every
tensor whose dtype numpy has is a read-only array over the mapping (no copy,
whatever its alignment: numpy reads unaligned data). BF16 and the 8-bit
floats, which numpy lacks, are decoded into new float32 arrays.
"""

from __future__ import annotations

import mmap
import os
from typing import Any, Dict, List, Optional, Tuple

import numpy as np

from . import _native

#: numpy dtypes of the tensor dtypes numpy has.
NUMPY_DTYPES = {
    "BOOL": np.dtype(np.bool_),
    "U8": np.dtype("<u1"),
    "I8": np.dtype("<i1"),
    "I16": np.dtype("<i2"),
    "U16": np.dtype("<u2"),
    "F16": np.dtype("<f2"),
    "I32": np.dtype("<i4"),
    "U32": np.dtype("<u4"),
    "F32": np.dtype("<f4"),
    "F64": np.dtype("<f8"),
    "I64": np.dtype("<i8"),
    "U64": np.dtype("<u8"),
}


def _float8_table(dtype: str) -> np.ndarray:
    return np.asarray(_native.float8_values(dtype), dtype=np.float32)


def array_of(buffer: Any, dtype: str, shape: List[int], offset: int, nbytes: int) -> np.ndarray:
    """The tensor at ``offset`` of ``buffer`` as a numpy array: a read-only
    view for the dtypes numpy has, a float32 copy for BF16 and 8-bit floats."""
    if dtype in NUMPY_DTYPES:
        np_dtype = NUMPY_DTYPES[dtype]
        array = np.frombuffer(buffer, dtype=np_dtype, count=nbytes // np_dtype.itemsize,
                              offset=offset)
        return array.reshape(shape)
    raw = np.frombuffer(buffer, dtype=np.uint8, count=nbytes, offset=offset)
    if dtype == "BF16":
        bits = raw.view("<u2").astype(np.uint32) << 16
        return bits.view(np.float32).reshape(shape)
    return _float8_table(dtype)[raw].reshape(shape)


class _Slice:
    """``get_slice(name)``: index it like an array (``[0:2, :]``)."""

    def __init__(self, array: np.ndarray) -> None:
        self._array = array

    def __getitem__(self, index: Any) -> np.ndarray:
        return self._array[index]

    def get_shape(self) -> List[int]:
        return list(self._array.shape)

    def get_dtype(self) -> str:
        return str(self._array.dtype)


class safe_open:
    """A validated tensor file (BinTensors, safetensors, EMBD or TLLM,
    detected by content), mapped read-only. Use as a context manager::

        with modelbin.safe_open("model.safetensors", framework="np") as f:
            w = f.get_tensor("weight")
    """

    def __init__(self, filename: "str | os.PathLike[str]", framework: str = "np",
                 device: str = "cpu") -> None:
        if framework not in ("np", "numpy"):
            raise ValueError(f"framework {framework!r} is not supported: modelbin gives numpy arrays (\"np\")")
        self._path = os.fspath(filename)
        self.format, entries, self._metadata = _native.tensor_table(self._path)
        self._entries: Dict[str, Tuple[str, List[int], int, int]] = {
            name: (dtype, shape, offset, nbytes) for name, dtype, shape, offset, nbytes in entries
        }
        with open(self._path, "rb") as file:
            size = os.fstat(file.fileno()).st_size
            self._map = mmap.mmap(file.fileno(), 0, access=mmap.ACCESS_READ) if size else b""

    def __enter__(self) -> "safe_open":
        return self

    def __exit__(self, *exc: Any) -> None:
        # Arrays handed out keep the mapping alive; it is unmapped when the
        # last one goes.
        self._map = None

    def keys(self) -> List[str]:
        """Tensor names, sorted (as safetensors gives them)."""
        return sorted(self._entries)

    def metadata(self) -> Optional[Dict[str, str]]:
        """The string metadata (``None`` when the file has no metadata map)."""
        return None if self._metadata is None else dict(self._metadata)

    def get_tensor(self, name: str) -> np.ndarray:
        """The tensor ``name`` (a read-only view of the mapping where numpy
        has the dtype)."""
        if self._map is None:
            raise ValueError("the file is closed")
        try:
            dtype, shape, offset, nbytes = self._entries[name]
        except KeyError:
            raise KeyError(f"no tensor named {name!r}") from None
        return array_of(self._map, dtype, shape, offset, nbytes)

    def get_slice(self, name: str) -> _Slice:
        """The tensor ``name``, to index: ``f.get_slice("w")[0:2]``."""
        return _Slice(self.get_tensor(name))

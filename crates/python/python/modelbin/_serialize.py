"""safetensors' low-level writer: :class:`TensorSpec` (a tensor's dtype,
shape and the address of its bytes) and :func:`serialize` /
:func:`serialize_file` of a ``dict[str, TensorSpec]``, as safetensors 0.8.0
has them.

Like safetensors, this reads raw memory: the caller keeps every buffer a
spec points at alive, unchanged and at least ``data_len`` bytes long until
the call returns.
"""

from __future__ import annotations

import ctypes
import os
from typing import Dict, List, Optional, Sequence

from . import _native
from ._native import SafetensorError

#: The dtype names ``TensorSpec`` takes (torch's and numpy's spelling), by
#: the tensor dtype they stand for.
_DTYPES_BY_SPEC_NAME = {
    "bool": "BOOL", "int8": "I8", "uint8": "U8", "int16": "I16", "uint16": "U16",
    "int32": "I32", "uint32": "U32", "int64": "I64", "uint64": "U64",
    "float16": "F16", "float32": "F32", "float64": "F64", "bfloat16": "BF16",
    "float8_e4m3fn": "F8_E4M3", "float8_e5m2": "F8_E5M2",
}

#: Names safetensors takes whose dtypes modelbin's formats do not have.
_UNSUPPORTED = ("float8_e4m3fnuz", "float8_e5m2fnuz", "float8_e8m0fnu", "float4_e2m1fn_x2",
                "complex64")


class TensorSpec:
    """One tensor for :func:`serialize`: ``dtype`` (a name such as
    ``"float32"`` or ``"bfloat16"``), ``shape``, and ``data_len`` bytes at
    the address ``data_ptr``. An unknown dtype raises
    :class:`SafetensorError` here. ``dtype`` reads back as the file's name
    (``"F32"``)."""

    __slots__ = ("_dtype", "_shape", "_data_ptr", "_data_len")

    def __init__(self, *, dtype: str, shape: Sequence[int], data_ptr: int,
                 data_len: int) -> None:
        if dtype not in _DTYPES_BY_SPEC_NAME:
            if dtype in _UNSUPPORTED:
                raise SafetensorError(
                    f"dtype {dtype!r} is not one modelbin's tensor formats store")
            raise SafetensorError(
                f"Unknown dtype {dtype!r}. Supported dtypes: "
                + ", ".join(_DTYPES_BY_SPEC_NAME))
        if data_ptr < 0 or data_len < 0:
            raise SafetensorError("data_ptr and data_len must not be negative")
        self._dtype = _DTYPES_BY_SPEC_NAME[dtype]
        self._shape = [int(d) for d in shape]
        self._data_ptr = int(data_ptr)
        self._data_len = int(data_len)

    @property
    def dtype(self) -> str:
        """The dtype as the file names it (``"F32"``, ``"BF16"``)."""
        return self._dtype

    @property
    def shape(self) -> List[int]:
        """The tensor's shape."""
        return list(self._shape)

    @property
    def data_ptr(self) -> int:
        """The address of the tensor's bytes."""
        return self._data_ptr

    @property
    def data_len(self) -> int:
        """The length of the tensor's bytes."""
        return self._data_len

    def __repr__(self) -> str:
        return (f"TensorSpec(dtype='{self._dtype}', shape={self._shape}, "
                f"data_ptr={self._data_ptr}, data_len={self._data_len})")

    def _entry(self, name: str) -> "tuple[str, str, List[int], bytes]":
        data = ctypes.string_at(self._data_ptr, self._data_len) if self._data_len else b""
        return (name, self._dtype, self._shape, data)


def _entries(tensor_dict: Dict[str, TensorSpec]) -> "List[tuple[str, str, List[int], bytes]]":
    if not isinstance(tensor_dict, dict):
        raise TypeError(f"tensor_dict must be a dict of TensorSpec, got {type(tensor_dict).__name__}")
    for name, spec in tensor_dict.items():
        if not isinstance(spec, TensorSpec):
            raise TypeError(
                f"tensor {name!r}: expected a TensorSpec, got {type(spec).__name__}")
    return [spec._entry(name) for name, spec in tensor_dict.items()]


def serialize(tensor_dict: Dict[str, TensorSpec],
              metadata: Optional[Dict[str, str]] = None) -> bytes:
    """The bytes of a safetensors file of ``tensor_dict``."""
    data = _native.serialize("safetensors", _entries(tensor_dict), metadata, None)
    assert data is not None
    return data


def serialize_file(tensor_dict: Dict[str, TensorSpec], filename: "str | os.PathLike[str]",
                   metadata: Optional[Dict[str, str]] = None) -> None:
    """Writes a safetensors file of ``tensor_dict`` to ``filename``
    (atomically)."""
    _native.serialize("safetensors", _entries(tensor_dict), metadata, os.fspath(filename))

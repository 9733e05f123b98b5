"""Tensor files as numpy arrays or torch tensors: ``safe_open`` (as
safetensors has it) and the dtype tables :mod:`modelbin.numpy` and
:mod:`modelbin.torch` share.

The file is validated by the Rust reader, then mapped copy-on-write; every
tensor is a view of the mapping (no copy, whatever its alignment: numpy
reads unaligned data). numpy arrays are read-only; BF16 and the 8-bit floats
are ``ml_dtypes`` arrays, so writing them back gives the same bytes. Torch
tensors are writable, as safetensors gives them: a write changes the
mapping's private pages, never the file.
"""

from __future__ import annotations

import mmap
import os
from typing import Any, Dict, List, Optional, Tuple

import ml_dtypes
import numpy as np

from . import _native
from ._native import SafetensorError
from ._torch_tensors import tensor_of

#: numpy dtypes of the tensor dtypes (``ml_dtypes``' for those numpy lacks).
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
    "BF16": np.dtype(ml_dtypes.bfloat16),
    "F8_E4M3": np.dtype(ml_dtypes.float8_e4m3fn),
    "F8_E5M2": np.dtype(ml_dtypes.float8_e5m2),
}

#: The tensor dtype of each numpy dtype in :data:`NUMPY_DTYPES`.
DTYPE_NAMES = {dtype: name for name, dtype in NUMPY_DTYPES.items()}

_FORMATS_BY_EXTENSION = {".bt": "bintensors", ".bintensors": "bintensors",
                         ".safetensors": "safetensors"}

#: ``framework=`` names, as safetensors spells them.
_FRAMEWORKS = {"np": "numpy", "numpy": "numpy", "pt": "torch", "torch": "torch",
               "pytorch": "torch"}

#: One tensor to write: name, dtype name, shape, little-endian bytes.
Entry = Tuple[str, str, List[int], Any]


def array_of(buffer: Any, dtype: str, shape: List[int], offset: int, nbytes: int) -> np.ndarray:
    """The tensor at ``offset`` of ``buffer`` as a read-only numpy array
    viewing ``buffer``."""
    np_dtype = NUMPY_DTYPES[dtype]
    array = np.frombuffer(buffer, dtype=np_dtype, count=nbytes // np_dtype.itemsize,
                          offset=offset).reshape(shape)
    array.flags.writeable = False
    return array


def write_file(entries: List[Entry], filename: "str | os.PathLike[str]",
               metadata: Optional[Dict[str, str]]) -> None:
    """Writes ``entries`` atomically; the format is the extension's
    (``.bt``/``.bintensors`` or ``.safetensors``)."""
    path = os.fspath(filename)
    extension = os.path.splitext(path)[1].lower()
    if extension not in _FORMATS_BY_EXTENSION:
        raise ValueError(f"{path}: the extension must be .bt, .bintensors or .safetensors")
    _native.serialize(_FORMATS_BY_EXTENSION[extension], entries, metadata, path)


class safe_slice:
    """``get_slice(name)``: the tensor's shape and dtype without reading it;
    index it (``[0:2, :]``, ``[..., -1]``) for a view of that part, with
    safetensors' rules and messages: for numpy arrays its checks (the
    library's ``safetensors::slicing``; beyond safetensors, negative slice
    bounds count from the end, as numpy reads them), for torch tensors
    torch's indexing, as safetensors slices a mapped file's torch tensors."""

    def __init__(self, tensor: Any, dtype: str, shape: List[int], checked: bool) -> None:
        self._tensor = tensor
        self._dtype = dtype
        self._shape = shape
        self._checked = checked

    def __getitem__(self, index: Any) -> Any:
        if not self._checked:
            return self._tensor[index]
        return self._tensor[_native.resolve_slice(index, self._shape)]

    def get_shape(self) -> List[int]:
        """The tensor's shape."""
        return list(self._shape)

    def get_dtype(self) -> str:
        """The tensor's dtype, as safetensors names it (``"F32"``, ``"BF16"``)."""
        return self._dtype


class safe_open:
    """A validated tensor file (BinTensors, safetensors, EMBD or TLLM,
    detected by content), mapped. Use as a context manager::

        with modelbin.safe_open("model.safetensors", framework="np") as f:
            w = f.get_tensor("weight")

    ``framework``: ``"np"``/``"numpy"`` for numpy arrays, ``"pt"``/``"torch"``
    for torch tensors (needs PyTorch); ``device`` is where torch tensors go
    (numpy arrays stay on ``"cpu"``).
    """

    def __init__(self, filename: "str | os.PathLike[str]", framework: str = "np",
                 device: Any = "cpu") -> None:
        if framework not in _FRAMEWORKS:
            raise SafetensorError(
                f"framework {framework} is invalid: modelbin gives numpy (np) or torch (pt)")
        self._framework = _FRAMEWORKS[framework]
        if self._framework == "numpy" and device != "cpu":
            raise SafetensorError(f"Device {device} is not supported for framework numpy")
        self._device = device
        self._path = os.fspath(filename)
        try:
            # Opened by the library's rule for inputs: a FIFO or a device
            # raises at once instead of blocking.
            file = os.fdopen(_native.open_input(self._path), "rb")
        except FileNotFoundError:
            # safetensors' wording, which callers match on.
            raise FileNotFoundError(f"No such file or directory: {self._path}") from None
        with file:
            self.format, entries, self._metadata = _native.tensor_table(self._path)
            size = os.fstat(file.fileno()).st_size
            self._map: Any = mmap.mmap(file.fileno(), 0, access=mmap.ACCESS_COPY) if size else b""
        self._entries: Dict[str, Tuple[str, List[int], int, int]] = {
            name: (dtype, shape, offset, nbytes) for name, dtype, shape, offset, nbytes in entries
        }
        self._tensor_of: Any = tensor_of if self._framework == "torch" else array_of

    def __enter__(self) -> "safe_open":
        return self

    def __exit__(self, *exc: Any) -> None:
        # Tensors handed out keep the mapping alive; it is unmapped when the
        # last one goes.
        self._map = None

    def _open_map(self) -> Any:
        if self._map is None:
            raise SafetensorError("File is closed")
        return self._map

    def keys(self) -> List[str]:
        """Tensor names, sorted (as safetensors gives them)."""
        self._open_map()
        return sorted(self._entries)

    def offset_keys(self) -> List[str]:
        """Tensor names in the order of their data in the file."""
        self._open_map()
        return sorted(self._entries, key=lambda name: self._entries[name][2])

    def metadata(self) -> Optional[Dict[str, str]]:
        """The string metadata (``None`` when the file has no metadata map)."""
        self._open_map()
        return None if self._metadata is None else dict(self._metadata)

    def get_tensor(self, name: str) -> Any:
        """The tensor ``name``: a view of the mapping."""
        buffer = self._open_map()
        try:
            dtype, shape, offset, nbytes = self._entries[name]
        except KeyError:
            raise SafetensorError(f"File does not contain tensor {name}") from None
        tensor = self._tensor_of(buffer, dtype, shape, offset, nbytes)
        if self._framework == "torch" and self._device != "cpu":
            tensor = tensor.to(self._device)
        return tensor

    def get_tensors(self) -> Dict[str, Any]:
        """Every tensor, by name, in the order of their data in the file."""
        return {name: self.get_tensor(name) for name in self.offset_keys()}

    def get_slice(self, name: str) -> safe_slice:
        """The tensor ``name``, to index: ``f.get_slice("w")[0:2]``."""
        tensor = self.get_tensor(name)
        dtype, shape, _, _ = self._entries[name]
        return safe_slice(tensor, dtype, shape, checked=self._framework == "numpy")

"""Torch tensors viewing a tensor file's bytes, and the table of torch
dtypes: what :func:`modelbin.safe_open` (``framework="pt"``) and
:mod:`modelbin.torch` both need, in a module of its own so that neither
imports the other for it.

PyTorch is imported on first use: this module imports without it.
"""

from __future__ import annotations

import functools
from typing import Any, Dict, List

from ._native import SafetensorError


def import_torch() -> Any:
    """The ``torch`` module; ``ModuleNotFoundError`` saying how to install
    it when it is missing."""
    try:
        import torch
    except ModuleNotFoundError as e:
        raise ModuleNotFoundError(
            "modelbin.torch and safe_open(framework=\"pt\") need PyTorch: pip install torch"
        ) from e
    return torch


@functools.lru_cache(maxsize=None)
def torch_dtypes() -> Dict[str, Any]:
    """torch's dtype of each tensor dtype this torch has (uint16/32/64
    since torch 2.3, the 8-bit floats since 2.1)."""
    torch = import_torch()
    names = {"BOOL": "bool", "U8": "uint8", "I8": "int8", "I16": "int16", "U16": "uint16",
             "F16": "float16", "BF16": "bfloat16", "I32": "int32", "U32": "uint32",
             "F32": "float32", "F64": "float64", "I64": "int64", "U64": "uint64",
             "F8_E4M3": "float8_e4m3fn", "F8_E5M2": "float8_e5m2"}
    return {name: getattr(torch, attr) for name, attr in names.items() if hasattr(torch, attr)}


@functools.lru_cache(maxsize=None)
def dtype_names() -> Dict[Any, str]:
    """The tensor dtype of each torch dtype in :func:`torch_dtypes`."""
    return {dtype: name for name, dtype in torch_dtypes().items()}


def tensor_of(buffer: Any, dtype: str, shape: List[int], offset: int, nbytes: int) -> Any:
    """The tensor at ``offset`` of the writable ``buffer`` as a torch tensor
    viewing it (copied only when its offset is not a multiple of its element
    size, which torch's kernels need)."""
    torch = import_torch()
    try:
        torch_dtype = torch_dtypes()[dtype]
    except KeyError:
        raise SafetensorError(
            f"dtype {dtype} has no torch dtype in torch {torch.__version__}") from None
    if nbytes == 0:
        return torch.empty(shape, dtype=torch_dtype)
    if offset % torch_dtype.itemsize:
        raw = torch.frombuffer(buffer, dtype=torch.uint8, count=nbytes, offset=offset)
        return raw.clone().view(torch_dtype).reshape(shape)
    return torch.frombuffer(buffer, dtype=torch_dtype, count=nbytes // torch_dtype.itemsize,
                            offset=offset).reshape(shape)

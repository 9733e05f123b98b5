"""``safetensors.torch``'s functions over modelbin's formats.

``load_file`` reads BinTensors, safetensors, EMBD and TLLM files (detected
by content) as torch tensors viewing the mapped file; ``save_file`` writes
``.bt`` or ``.safetensors``, chosen by extension; ``load``/``save`` work on
a safetensors file's bytes. Every dtype of modelbin's formats has its torch
dtype (BF16 is ``torch.bfloat16``, F8_E4M3 ``torch.float8_e4m3fn``, F8_E5M2
``torch.float8_e5m2``).

PyTorch is imported on first use: this module imports without it, and its
functions say so when it is missing. As safetensors does, saving refuses
tensors that share memory (``save_model`` in safetensors deduplicates them
first), sparse and non-contiguous tensors.
"""

from __future__ import annotations

import os
from collections import defaultdict
from typing import Any, Dict, List, Optional, Set

from . import _native
from ._native import SafetensorError
from ._torch_tensors import dtype_names as _dtype_names
from ._torch_tensors import import_torch as _torch
from ._torch_tensors import tensor_of
from .tensors import Entry, safe_open, write_file


def storage_ptr(tensor: Any) -> int:
    """The address of ``tensor``'s storage (0 for a storage without data,
    such as the meta device's)."""
    try:
        return tensor.untyped_storage().data_ptr()
    except NotImplementedError:
        return 0


def storage_size(tensor: Any) -> int:
    """The size of ``tensor``'s whole storage, in bytes."""
    try:
        return tensor.untyped_storage().nbytes()
    except NotImplementedError:
        return tensor.nelement() * tensor.element_size()


def _end_ptr(tensor: Any) -> int:
    if tensor.nelement():
        return tensor.view(-1)[-1].data_ptr() + tensor.element_size()
    return tensor.data_ptr()


def _find_shared_tensors(state_dict: Dict[str, Any]) -> List[Set[str]]:
    """Groups of names whose tensors overlap in memory (a group of one for a
    tensor that shares with no other), as safetensors computes them: tensors
    on one storage that cover disjoint bytes are not shared."""
    torch = _torch()
    by_storage: Dict[Any, Set[str]] = defaultdict(set)
    for name, tensor in state_dict.items():
        if (tensor.device != torch.device("meta") and storage_ptr(tensor) != 0
                and storage_size(tensor) != 0):
            by_storage[(tensor.device, storage_ptr(tensor), storage_size(tensor))].add(name)
    groups: List[Set[str]] = []
    for shared in sorted(by_storage.values()):
        if len(shared) < 2:
            groups.append(shared)
            continue
        areas = sorted((state_dict[name].data_ptr(), _end_ptr(state_dict[name]), name)
                       for name in shared)
        _, last_stop, first = areas[0]
        groups.append({first})
        for start, stop, name in areas[1:]:
            if start >= last_stop:
                groups.append({name})
            else:
                groups[-1].add(name)
            last_stop = stop
    return groups


def _check_savable(tensors: Dict[str, Any]) -> None:
    """safetensors' checks before saving, with its exception types and
    wording."""
    torch = _torch()
    if not isinstance(tensors, dict):
        raise ValueError(f"Expected a dict of [str, torch.Tensor] but received {type(tensors)}")
    sparse = []
    for name, tensor in tensors.items():
        if not isinstance(tensor, torch.Tensor):
            raise ValueError(
                f"Key `{name}` is invalid, expected torch.Tensor but received {type(tensor)}")
        if tensor.layout != torch.strided:
            sparse.append(name)
    if sparse:
        raise ValueError(
            f"You are trying to save a sparse tensors: `{sparse}` which this library does not"
            " support. You can make it a dense tensor before saving with `.to_dense()` but be"
            " aware this might make a much larger file than needed.")
    failing = [names for names in _find_shared_tensors(tensors) if len(names) > 1]
    if failing:
        raise RuntimeError(
            f"""
            Some tensors share memory, this will lead to duplicate memory on disk and potential differences when loading them again: {failing}.
            A potential way to correctly save your model is to use `save_model`.
            More information at https://huggingface.co/docs/safetensors/torch_shared_tensors
            """)
    for name, tensor in tensors.items():
        if not tensor.is_contiguous():
            raise ValueError(
                f"You are trying to save a non contiguous tensor: `{name}` which is not allowed."
                " It either means you are trying to save tensors which are reference of each"
                " other in which case it's recommended to save only the full tensors, and"
                " reslice at load time, or simply call `.contiguous()` on your tensor to pack it"
                " before saving.")


def _entries(tensors: Dict[str, Any]) -> List[Entry]:
    torch = _torch()
    _check_savable(tensors)
    entries = []
    for name, tensor in tensors.items():
        try:
            dtype = _dtype_names()[tensor.dtype]
        except KeyError:
            raise ValueError(
                f"tensor {name!r}: torch dtype {tensor.dtype} has no tensor dtype") from None
        flat = tensor.detach().to("cpu").reshape(-1)
        data = flat.view(torch.uint8).numpy().tobytes() if flat.numel() else b""
        entries.append((name, dtype, list(tensor.shape), data))
    return entries


def load_file(filename: "str | os.PathLike[str]", device: Any = "cpu") -> Dict[str, Any]:
    """Every tensor of a file, by name, on ``device`` (on the CPU, writable
    views of the file mapped copy-on-write)."""
    with safe_open(filename, framework="pt", device=device) as f:
        return f.get_tensors()


def save_file(tensors: Dict[str, Any], filename: "str | os.PathLike[str]",
              metadata: Optional[Dict[str, str]] = None) -> None:
    """Writes ``tensors`` atomically; the format is the extension's
    (``.bt``/``.bintensors`` or ``.safetensors``)."""
    write_file(_entries(tensors), filename, metadata)


def save(tensors: Dict[str, Any], metadata: Optional[Dict[str, str]] = None) -> bytes:
    """The bytes of a safetensors file of ``tensors``."""
    data = _native.serialize("safetensors", _entries(tensors), metadata, None)
    assert data is not None
    return data


def load(data: bytes) -> Dict[str, Any]:
    """Every tensor of a file's bytes, on the CPU (one copy of ``data``,
    which the tensors view)."""
    _, entries, _ = _native.tensor_table_of_bytes(data)
    buffer = bytearray(data)
    return {name: tensor_of(buffer, dtype, shape, offset, nbytes)
            for name, dtype, shape, offset, nbytes in entries}

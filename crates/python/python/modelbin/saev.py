"""SAEV activation datasets for PyTorch-style training loops.

A dataset is a directory (``<root>/<hash>/``: ``metadata.json`` and
``acts*.bin`` shards of raw float32, valid to open with ``np.memmap``).
:class:`Dataset` indexes the examples of one view (which tokens of which
layers); :class:`ShuffledLoader` streams ``[batch, d]`` float32 batches
(each example once per epoch, deterministic per seed; ``torch.from_numpy``
takes them without a copy); :class:`Writer` writes a dataset exactly as the
reference writer does (directory, hash, shards).

Several datasets (a list of paths, or a union manifest ``union.json`` that
:func:`write_union` writes) are read as one: their images one after the
other, the shuffled order defined over the whole (the union of a dataset's
slices shuffles exactly as the dataset). They must agree on the model,
layers, tokens per image and width.
"""

from __future__ import annotations

import json
import os
from typing import Any, Dict, Iterator, List, Literal, Optional, Sequence, Tuple, Union

import numpy as np

from . import _native

Patches = Literal["image", "cls", "all"]
Layer = Union[int, Literal["all"]]
Paths = Union[str, "os.PathLike[str]", Sequence[Union[str, "os.PathLike[str]"]]]


def _paths(path: Paths) -> List[str]:
    if isinstance(path, (str, os.PathLike)):
        return [os.fspath(path)]
    return [os.fspath(p) for p in path]


def write_union(out: "str | os.PathLike[str]",
                members: Sequence["str | os.PathLike[str]"]) -> str:
    """Writes ``out/union.json``: the manifest of ``members`` (datasets or
    manifests, in this order, all below ``out``) read as one dataset, each
    listed by relative path and hash; checks it by reading it back and
    returns its path (what ``modelbin acts union`` writes)."""
    return os.fspath(_native.saev_write_union(os.fspath(out), _paths(members)))


def _layer(layer: Layer) -> Optional[int]:
    if layer == "all":
        return None
    if isinstance(layer, bool) or not isinstance(layer, int):
        raise TypeError(f"layer is an int (negative counts from the end) or \"all\", not {layer!r}")
    return layer


class Dataset:
    """The examples of a dataset's view: ``len(ds)``, ``ds[i]`` (float32
    ``[d]``), ``ds.coordinates(i)`` → (image, layer, token). ``path`` may
    be several datasets or a union manifest, read as one (images numbered
    across the members). ``metadata`` is the (first) dataset's
    ``metadata.json``; ``union`` the union's members, image count and
    hash. Pickles by path and view."""

    def __init__(self, path: Paths, layer: Layer = "all",
                 patches: Patches = "image") -> None:
        self._args = (path if isinstance(path, (str, os.PathLike)) else _paths(path),
                      layer, patches)
        self._native = _native.NativeDataset(_paths(path), _layer(layer), patches)
        self.metadata: Dict[str, Any] = json.loads(self._native.metadata_json())
        self.union: Dict[str, Any] = json.loads(self._native.union_json())

    def __reduce__(self):
        return (Dataset, self._args)

    def __len__(self) -> int:
        return self._native.__len__()

    def __getitem__(self, i: "int | slice") -> np.ndarray:
        """Example ``i`` (``[d]``), or the examples of a slice stacked
        (``[n, d]``)."""
        if isinstance(i, slice):
            rows = [self._native.example(j)[0] for j in range(*i.indices(len(self)))]
            if not rows:
                return np.zeros((0, self._native.example(0)[0].shape[0] if len(self) else 0),
                                np.float32)
            return np.stack(rows)
        if i < 0:
            i += len(self)
        if not 0 <= i < len(self):
            raise IndexError(f"example {i} of {len(self)}")
        return self._native.example(i)[0]

    def coordinates(self, i: int) -> Tuple[int, int, int]:
        """(image, layer value, physical token) of example ``i``."""
        return self._native.example(i)[1]

    def get(self, img: int, layer: int, token: int) -> np.ndarray:
        """The vector of (image, layer value, physical token; 0 is CLS when
        the dataset has one)."""
        return self._native.vector(img, layer, token)


class ShuffledLoader:
    """Batches of a view, float32 ``[batch_size, d]`` (the last one may be
    shorter). Each ``iter()`` is a new epoch: every example exactly once, in
    an order that depends only on ``seed``, the epoch number and the
    examples (a union of slices gives the order of the whole)."""

    def __init__(self, path: Paths, layer: Layer = "all",
                 patches: Patches = "image", batch_size: int = 4096, seed: int = 0,
                 num_threads: int = 2, shuffle: bool = True) -> None:
        self._args = dict(path=_paths(path), layer=layer, patches=patches,
                          batch_size=batch_size, seed=seed, num_threads=num_threads,
                          shuffle=shuffle)
        self._dataset = Dataset(path, layer, patches)
        self.epoch = 0

    def __reduce__(self):
        return (_loader, (self._args,))

    def __iter__(self) -> Iterator[np.ndarray]:
        a = self._args
        batches = self._dataset._native.loader(a["shuffle"], a["batch_size"], a["seed"],
                                               self.epoch, a["num_threads"])
        self.epoch += 1
        return iter(batches)


def _loader(args: Dict[str, Any]) -> ShuffledLoader:
    return ShuffledLoader(**args)


class Writer:
    """Writes a dataset under ``root``: ``write`` float32 images
    ``[n, L, T, d]`` (any number of calls), then ``close`` (returns the
    dataset's directory). Usable as a context manager."""

    def __init__(self, root: "str | os.PathLike[str]", metadata: Dict[str, Any]) -> None:
        self._native = _native.NativeWriter(os.fspath(root), json.dumps(metadata))

    def write(self, images: np.ndarray) -> None:
        self._native.write(np.ascontiguousarray(images, dtype=np.float32))

    def close(self) -> str:
        return os.fspath(self._native.close())

    def __enter__(self) -> "Writer":
        return self

    def __exit__(self, exc_type, *rest: Any) -> None:
        if exc_type is None:
            self.close()

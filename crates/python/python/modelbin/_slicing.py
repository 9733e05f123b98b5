"""``safe_open(...).get_slice(name)[index]`` as safetensors reads it: the
index (ints, slices with a positive step, one ``...``, an empty list) is
checked against the tensor's shape with safetensors' rules and messages,
then applied as a numpy/torch basic index (a view, no copy).

Beyond safetensors, negative slice bounds count from the end (as in numpy);
a bound still below zero is refused like a negative int out of range.
"""

from __future__ import annotations

import operator
from typing import Any, List, Optional, Sequence, Tuple, Union

from ._native import SafetensorError

#: One resolved index of a dimension: an ``int`` (select) or a slice
#: (start, stop, step; None for an absent bound, as it is displayed).
Indexer = Union[int, Tuple[Optional[int], Optional[int], int]]


def _show(indexer: Indexer) -> str:
    """An indexer as safetensors prints it in its messages (``2:``, ``:20``, ``0``)."""
    if isinstance(indexer, int):
        return str(indexer)
    start, stop, step = indexer
    text = f"{'' if start is None else start}:{'' if stop is None else stop}"
    return text if step == 1 else f"{text}:{step}"


def _resolve_bound(bound: Any, dim: int, position: int) -> Optional[int]:
    if bound is None:
        return None
    value = operator.index(bound)
    if value < 0:
        if value + dim < 0:
            raise SafetensorError(f"Invalid index {value} for dimension {position} of size {dim}")
        value += dim
    return value


def parse(index: Any, shape: Sequence[int]) -> List[Indexer]:
    """``index`` as one indexer per leading dimension it names (safetensors'
    ``parse_indexers``)."""
    if isinstance(index, tuple):
        items = list(index)
    elif isinstance(index, list):
        if index:
            raise SafetensorError("Non empty lists are not implemented")
        return [(0, 0, 1)]
    else:
        items = [index]
    ellipses = sum(1 for item in items if item is Ellipsis)
    if ellipses > 1:
        raise SafetensorError("Only one ellipsis (...) is allowed in slice index")
    expansion = max(len(shape) - (len(items) - ellipses), 0)
    indexers: List[Indexer] = []
    for item in items:
        position = len(indexers)
        dim = shape[position] if position < len(shape) else 0
        if item is Ellipsis:
            indexers.extend([(None, None, 1)] * expansion)
        elif isinstance(item, slice):
            step = 1 if item.step is None else operator.index(item.step)
            if step <= 0:
                raise SafetensorError(f"Slice step must be a positive integer, got {step}")
            indexers.append((_resolve_bound(item.start, dim, position),
                             _resolve_bound(item.stop, dim, position), step))
        else:
            try:
                value = operator.index(item)
            except TypeError:
                raise SafetensorError(
                    f"Unsupported slice index at position {position}: "
                    "expected slice, int, or ellipsis") from None
            if value < 0:
                if value + dim < 0:
                    raise SafetensorError(
                        f"Invalid index {value} for dimension {position} of size {dim}")
                value += dim
            indexers.append(value)
    return indexers


def check(indexers: List[Indexer], shape: Sequence[int]) -> Tuple[Any, ...]:
    """The numpy/torch index of ``indexers``, after safetensors' bounds
    checks (innermost dimension first, as safetensors reports them)."""
    problem = None
    if len(indexers) > len(shape):
        problem = "more slicing indexes than dimensions in tensor"
    else:
        for position in reversed(range(len(indexers))):
            problem = _out_of_range(indexers[position], shape[position], position)
            if problem:
                break
    if problem:
        shown = ", ".join(_show(indexer) for indexer in indexers)
        raise SafetensorError(
            f"Error during slicing [{shown}] with shape {list(shape)}: {problem}")
    return tuple(indexer if isinstance(indexer, int) else slice(*indexer)
                 for indexer in indexers)


def _out_of_range(indexer: Indexer, dim: int, position: int) -> Optional[str]:
    if isinstance(indexer, int):
        start, stop, whole = indexer, indexer + 1, False
    else:
        start = 0 if indexer[0] is None else indexer[0]
        stop = dim if indexer[1] is None else indexer[1]
        # A whole dimension of size 0 is an empty selection, not out of range.
        whole = indexer[0] is None and dim == 0
    if (start >= dim and not whole) or stop > dim:
        asked = start if start >= dim and not whole else stop - 1
        return f"index {asked} out of bounds for tensor dimension #{position} of size {dim}"
    return None

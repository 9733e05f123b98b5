"""Whole-file operations of the top-level package: verify, inspect,
convert, and pricing tokens."""

from __future__ import annotations

import json
import os
from typing import Any, Dict, Optional, Union


def verify(path: "str | os.PathLike[str]") -> None:
    """Opens ``path`` (any format modelbin reads, detected by content) and
    runs every check; raises :class:`FormatError` on the first problem."""
    from . import _native

    _native.verify(os.fspath(path))


def inspect(path: "str | os.PathLike[str]") -> Dict[str, Any]:
    """What ``modelbin inspect --json PATH`` prints, as a dict."""
    from . import _native

    return json.loads(_native.inspect_json(os.fspath(path)))


def convert(src: "str | os.PathLike[str]", dst: "str | os.PathLike[str]", *,
            to: Optional[str] = None, dtype: Optional[str] = None,
            no_special_tokens: bool = False, progress: Optional[bool] = None) -> Dict[str, Any]:
    """Converts ``src`` (a file, or a Hugging Face model directory) into
    ``dst``, written atomically: the same bytes as ``modelbin convert SRC -o
    DST``. ``to`` is the output format's name (default: from ``dst``'s
    extension), or ``"sentence-transformers"``: a model directory that
    ``SentenceTransformer(dst)`` loads, from an EMBD file or a Hugging Face
    model directory; ``dtype`` stores an EMBD model's weights as ``"f32"``,
    ``"f16"``, ``"bf16"`` or ``"int8"``. Returns the report ``convert --json``
    prints (``from``, ``to``, ``tensors``, ``bytes_written``)."""
    from . import _native, _progress

    callback, bar = _progress.bytes_callback(progress, "converting")
    try:
        report = _native.convert(os.fspath(src), os.fspath(dst), to=to, dtype=dtype,
                                 no_special_tokens=no_special_tokens, progress=callback)
    finally:
        if bar is not None:
            bar.close()
    return json.loads(report)


def cost(model: str, input_tokens: Union[int, str], output_tokens: int = 0,
         cached_tokens: int = 0,
         prices: "Optional[str | os.PathLike[str] | Dict[str, Any]]" = None
         ) -> Dict[str, Any]:
    """What sending ``input_tokens`` (a count, or a text counted with the
    model's encoding) to ``model`` and getting ``output_tokens`` back costs:
    the dict ``modelbin tokens cost --json`` prints (``model``, ``priced_as``,
    ``encoding``, token counts, ``input_cost``, ``output_cost``,
    ``total_cost``, ``currency``, ``prices_as_of``). ``prices`` is a price
    table (a file, or a dict of the same shape) whose entries add to the
    bundled ones; a table in another currency replaces them. ``KeyError`` for a
    model no table prices; ``ValueError`` for cached tokens without a cached
    price or output tokens without an output price."""
    from . import _native

    if isinstance(prices, dict):
        return json.loads(_native.cost(model, input_tokens, output_tokens, cached_tokens,
                                       prices_json=json.dumps(prices)))
    return json.loads(_native.cost(model, input_tokens, output_tokens, cached_tokens,
                                   None if prices is None else os.fspath(prices)))

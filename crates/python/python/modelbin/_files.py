"""Whole-file operations of the top-level package: verify, inspect,
convert, and pricing tokens."""

from __future__ import annotations

import json
import os
import warnings
from typing import Any, Dict, List, Optional, Union


def verify(path: "str | os.PathLike[str]") -> None:
    """Opens ``path`` (any format modelbin reads, detected by content) and
    runs every check; raises :class:`FormatError` on the first problem."""
    from . import _native

    _native.verify(os.fspath(path))


def checkpoint_id(path: "str | os.PathLike[str]") -> str:
    """The checkpoint id of the model at ``path`` (a Hugging Face model
    directory, or a TLLM or EMBD file): for a directory ``sha256-tensors:``
    and a digest of its tensors (names, dtypes, shapes, bytes; the same
    however they are sharded), for a file ``sha256:`` and the file's
    digest. What a recording's ``vit_ckpt`` names its model by, and what
    ``sae eval --model``, ``sae features --model`` and steering compare."""
    from . import _native

    return _native.checkpoint_id(os.fspath(path))


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


#: A chat: a list of OpenAI messages, or a request body with ``messages``.
Chat = Union[List[Dict[str, Any]], Dict[str, Any]]


def count_messages(messages: Chat, model: str = "gpt-4o", *,
                   encoding: Optional[str] = None) -> int:
    """The input tokens of a chat as OpenAI's Chat Completions API takes it:
    a list of messages (text and image parts, ``tool_calls`` with
    ``"content": None``, ``role: "tool"`` replies), or a request body with
    ``messages`` and ``tools``. Counted with ``model``'s encoding (or
    ``encoding``) by OpenAI's rules, as ``modelbin tokens count --messages``
    does: the cookbook's per-message overhead and tool-definition rule, tool
    calls' names and arguments, and the tile rule for images. What had to be
    assumed (an image whose size is unknown) is warned as a
    ``UserWarning``, never counted as 0."""
    from . import _native
    from .encoding import encoding_name_for_model

    name = encoding if encoding is not None else encoding_name_for_model(model)
    report = json.loads(_native.count_chat(json.dumps(messages), model, name))
    for warning in report["warnings"]:
        warnings.warn(warning, stacklevel=2)
    return int(report["total"])


def cost(model: str, input_tokens: "Union[int, str, Chat]" = 0, output_tokens: int = 0,
         cached_tokens: int = 0,
         prices: "Optional[str | os.PathLike[str] | Dict[str, Any]]" = None, *,
         messages: Optional[Chat] = None) -> Dict[str, Any]:
    """What sending ``input_tokens`` (a count, a text counted with the
    model's encoding, or a chat) to ``model`` and getting ``output_tokens``
    back costs: the dict ``modelbin tokens cost --json`` prints (``model``,
    ``priced_as``, ``encoding``, token counts, ``input_cost``,
    ``output_cost``, ``total_cost``, ``currency``, ``prices_as_of``). A chat
    (``messages``, or a list of messages or request body given as
    ``input_tokens``) is counted as :func:`count_messages` counts it, with the
    priced model's encoding, and added. ``prices`` is a price table (a file,
    or a dict of the same shape) whose entries add to the bundled ones; a
    table in another currency replaces them; prices over 90 days old warn
    (``UserWarning``), as the command line does. ``KeyError`` for a model no
    table prices; ``ValueError`` for cached tokens without a cached price or
    output tokens without an output price."""
    from . import _native
    from .encoding import get_encoding

    if isinstance(input_tokens, (list, dict)):
        if messages is not None:
            raise TypeError("give the chat once: as input_tokens or as messages=")
        input_tokens, messages = 0, input_tokens
    table: Dict[str, Any] = ({"prices_json": json.dumps(prices)} if isinstance(prices, dict)
                             else {"prices": None if prices is None else os.fspath(prices)})
    if messages is not None:
        # The priced model's encoding (a price table may name one for a
        # model tiktoken does not map) counts the chat.
        encoding = json.loads(_native.cost(model, 0, 0, 0, **table))["estimate"]["encoding"]
        report = json.loads(_native.count_chat(json.dumps(messages), model, encoding))
        for warning in report["warnings"]:
            warnings.warn(warning, stacklevel=2)
        chat_tokens = int(report["total"])
        if isinstance(input_tokens, str):
            chat_tokens += get_encoding(encoding).count(input_tokens)
            input_tokens = 0
        input_tokens = int(input_tokens) + chat_tokens
    priced = json.loads(_native.cost(model, input_tokens, output_tokens, cached_tokens, **table))
    if priced["stale"] is not None:
        # As the command line warns: the library says when, each face words it.
        warnings.warn(f"{priced['stale']}: pass prices= with current ones", stacklevel=2)
    estimate: Dict[str, Any] = priced["estimate"]
    return estimate

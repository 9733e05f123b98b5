"""modelbin: exact, fast readers and engines for the binary files of ML.

- Tokenizer, as ``tiktoken``: :func:`get_encoding`, :func:`encoding_for_model`,
  :func:`list_encoding_names`, :class:`Encoding` (``Encoding.load`` for a
  ``.bpe2`` or ``.tiktoken`` file), :func:`clear_piece_cache`.
- Sentence embeddings, as ``sentence-transformers``: :class:`SentenceEmbedder`.
- Tensor files, as ``safetensors.numpy``: :mod:`modelbin.numpy` and
  :func:`safe_open`, over BinTensors, safetensors, EMBD and TLLM.
- SAEV activations for training loops: :mod:`modelbin.saev`; TopK sparse
  autoencoders in SAELens's layout: :class:`modelbin.sae.SAE`.
- TLLM models: :class:`TLLM`.
- Any file: :func:`verify` and :func:`inspect`.

Every object pickles by path and options, so it can be shipped to worker
processes (multiprocessing, Ray); memory-mapped files are shared through the
page cache.
"""

from __future__ import annotations

import json
import os
from typing import Any, Dict

from . import numpy, sae, saev
from ._native import FormatError
from .embeddings import SentenceEmbedder
from .encoding import (
    Encoding,
    clear_piece_cache,
    encoding_for_model,
    get_encoding,
    list_encoding_names,
)
from .models import TLLM
from .tensors import safe_open

__all__ = [
    "Encoding",
    "FormatError",
    "SentenceEmbedder",
    "TLLM",
    "clear_piece_cache",
    "encoding_for_model",
    "get_encoding",
    "inspect",
    "list_encoding_names",
    "numpy",
    "sae",
    "saev",
    "safe_open",
    "verify",
]


def verify(path: "str | os.PathLike[str]") -> None:
    """Opens ``path`` (any format modelbin reads, detected by content) and
    runs every check; raises :class:`FormatError` on the first problem."""
    from . import _native

    _native.verify(os.fspath(path))


def inspect(path: "str | os.PathLike[str]") -> Dict[str, Any]:
    """What ``modelbin inspect --json PATH`` prints, as a dict."""
    from . import _native

    return json.loads(_native.inspect_json(os.fspath(path)))

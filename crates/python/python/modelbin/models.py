"""TLLM models: logits and generation."""

from __future__ import annotations

import os
from typing import List, Optional, Sequence, Union

import numpy as np

from . import _native


class TLLM:
    """A TLLM model (the tiny GPT-style transformer of ``.tllm`` files).
    Pickles by path."""

    def __init__(self, path: "str | os.PathLike[str]") -> None:
        self._path = os.fspath(path)
        self._native = _native.NativeTllm(self._path)

    def __reduce__(self):
        return (TLLM, (self._path,))

    @property
    def vocab_size(self) -> int:
        return self._native.vocab_size

    @property
    def max_seq_len(self) -> int:
        return self._native.max_seq_len

    def logits(self, ids: Sequence[int], all_positions: bool = False) -> np.ndarray:
        """float32 logits of the last position ``[vocab_size]``, or of every
        position ``[len(ids), vocab_size]``."""
        logits = self._native.logits(list(ids))
        return logits if all_positions else logits[-1]

    def generate(self, prompt: Union[str, bytes, None] = None, ids: Optional[Sequence[int]] = None,
                 max_tokens: int = 64, temperature: float = 1.0, top_k: Optional[int] = None,
                 top_p: Optional[float] = None, seed: int = 0,
                 stop: Optional[int] = None) -> List[int]:
        """Up to ``max_tokens`` ids after the prompt (``ids``, or the UTF-8
        bytes of ``prompt`` for a byte-level model); temperature 0 is greedy.
        Past ``max_seq_len`` tokens the window slides: each further token is
        predicted from the last ``max_seq_len`` tokens."""
        if (prompt is None) == (ids is None):
            raise ValueError("give either prompt or ids")
        if ids is None:
            data = prompt.encode("utf-8") if isinstance(prompt, str) else bytes(prompt)
            ids = list(data)
        generated, _ = self._native.generate(list(ids), max_tokens, temperature, top_k, top_p,
                                             seed, stop)
        return generated

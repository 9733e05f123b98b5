"""TLLM models: logits and generation."""

from __future__ import annotations

import json
import os
from typing import Any, Callable, Dict, List, Optional, Sequence, Union

import numpy as np

from . import _native, _progress


#: What :meth:`TLLM.train` takes for a keyword left as None: the library's
#: defaults, which ``modelbin tllm train``'s flags take too.
TRAIN_DEFAULTS: Dict[str, Any] = json.loads(_native.defaults())["tllm_train"]


class TLLM:
    """A TLLM model (the tiny GPT-style transformer of ``.tllm`` files).
    Pickles by path."""

    def __init__(self, path: "str | os.PathLike[str]") -> None:
        self._path = os.fspath(path)
        self._native = _native.NativeTllm(self._path)
        #: What training measured (``train``'s result only).
        self.summary: Optional[Dict[str, Any]] = None

    def __reduce__(self):
        return (TLLM, (self._path,))

    @classmethod
    def train(cls, corpus: "Sequence[str | os.PathLike[str]]", out: "str | os.PathLike[str]", *,
              dim: Optional[int] = None, layers: Optional[int] = None,
              heads: Optional[int] = None, ffn: Optional[int] = None, seq: Optional[int] = None,
              dropout: Optional[float] = None, batch_size: Optional[int] = None,
              steps: Optional[int] = None, lr: Optional[float] = None,
              warmup: Optional[int] = None, weight_decay: Optional[float] = None,
              clip: Optional[float] = None, seed: Optional[int] = None,
              val_fraction: Optional[float] = None, eval_every: Optional[int] = None,
              checkpoint_every: Optional[int] = None, resume: bool = False, force: bool = False,
              threads: Optional[int] = None, progress: Optional[bool] = None,
              on_step: Optional[Callable[[Dict[str, Any]], None]] = None) -> "TLLM":
        """Trains a byte-level model on the ``corpus`` files (concatenated;
        bytes are the tokens) and saves it at ``out``: what ``modelbin tllm
        train`` does with the same arguments (the keyword arguments are its
        flags; one left as None takes the library's default, the flag's:
        :data:`TRAIN_DEFAULTS`), bit for bit with the same seed and
        ``threads``. ``resume=True`` continues the checkpoint at ``out``,
        ``force=True`` replaces a model there. ``on_step`` gets each step's
        report (``step``, ``loss``, ``lr``, ``grad_norm``,
        ``tokens_per_second``, ``val_loss`` where evaluated). Ctrl-C stops
        between steps (``KeyboardInterrupt``), leaving the last checkpoint.
        Returns the trained model; its ``summary`` is what ``tllm train
        --json`` prints."""
        total = TRAIN_DEFAULTS["steps"] if steps is None else steps
        reports = _progress.Steps(progress, total, lambda r: f"loss {r['loss']:.3f}", on_step)
        try:
            summary = _native.tllm_train(
                [os.fspath(path) for path in corpus], os.fspath(out), dim=dim, layers=layers,
                heads=heads, ffn=ffn, seq=seq, dropout=dropout, batch_size=batch_size,
                steps=steps, lr=lr, warmup=warmup, weight_decay=weight_decay, clip=clip,
                seed=seed, val_fraction=val_fraction, eval_every=eval_every,
                checkpoint_every=checkpoint_every, resume=resume, force=force,
                threads=threads, progress=reports.callback)
        finally:
            reports.close()
        model = cls(out)
        model.summary = json.loads(summary)
        return model

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
        generated, _ = self._native.generate(list(ids), max_tokens,
                                             (temperature, top_k, top_p, seed), stop)
        return generated

"""Sentence embeddings with sentence-transformers' names."""

from __future__ import annotations

import os
import sys
from typing import Any, Dict, List, Sequence, Union

import numpy as np

from . import _native


class SentenceEmbedder:
    """A BERT sentence encoder from an ``.embd`` file or a Hugging Face /
    sentence-transformers model directory; its embeddings equal
    sentence-transformers' (cosine ≥ 0.9999 on the golden set).

    Thread-safe; the GIL is released while it runs. Pickles by path.
    """

    def __init__(self, model_name_or_path: "str | os.PathLike[str]") -> None:
        self._path = os.fspath(model_name_or_path)
        self._native = _native.NativeEmbedder(self._path)

    def __reduce__(self):
        return (SentenceEmbedder, (self._path,))

    @property
    def max_seq_length(self) -> int:
        """Longest input in tokens; longer texts are truncated."""
        return self._native.max_seq_length

    def get_sentence_embedding_dimension(self) -> int:
        """Width of the embeddings."""
        return self._native.dim

    def encode(self, sentences: Union[str, Sequence[str]], batch_size: int = 32,
               show_progress_bar: bool = False, convert_to_numpy: bool = True,
               normalize_embeddings: bool = True) -> Union[np.ndarray, List[np.ndarray]]:
        """Embeddings of ``sentences``: float32 ``[n, dim]`` (``[dim]`` for a
        single string). Results do not depend on ``batch_size``: sentences
        are packed by length without padding."""
        single = isinstance(sentences, str)
        texts = [sentences] if single else list(sentences)
        step = max(1, batch_size) * 64
        parts = []
        for start in range(0, len(texts), step):
            parts.append(self._native.embed(texts[start:start + step]))
            if show_progress_bar:
                print(f"\rembedding {min(start + step, len(texts))}/{len(texts)}", end="",
                      file=sys.stderr)
        if show_progress_bar:
            print(file=sys.stderr)
        dim = self.get_sentence_embedding_dimension()
        out = np.concatenate(parts) if parts else np.zeros((0, dim), dtype=np.float32)
        if normalize_embeddings and len(out):
            norms = np.linalg.norm(out, axis=1, keepdims=True)
            out = out / np.maximum(norms, 1e-12)
            out = out.astype(np.float32, copy=False)
        if single:
            return out[0]
        return out if convert_to_numpy else list(out)

    def similarity(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        """Cosine similarities of every row of ``a`` with every row of ``b``."""
        a = np.atleast_2d(np.asarray(a, dtype=np.float32))
        b = np.atleast_2d(np.asarray(b, dtype=np.float32))
        a = a / np.maximum(np.linalg.norm(a, axis=1, keepdims=True), 1e-12)
        b = b / np.maximum(np.linalg.norm(b, axis=1, keepdims=True), 1e-12)
        return a @ b.T

    def tokenize(self, texts: Sequence[str]) -> Dict[str, np.ndarray]:
        """Model inputs: ``input_ids`` and ``attention_mask``, int64, padded
        with 0 to the longest."""
        ids = self._native.tokenize(list(texts))
        width = max((len(seq) for seq in ids), default=0)
        input_ids = np.zeros((len(ids), width), dtype=np.int64)
        mask = np.zeros((len(ids), width), dtype=np.int64)
        for row, seq in enumerate(ids):
            input_ids[row, :len(seq)] = seq
            mask[row, :len(seq)] = 1
        return {"input_ids": input_ids, "attention_mask": mask}


class LineIndex:
    """The non-empty lines of text files with their embeddings, searched by
    meaning: what ``modelbin embed --input F -o OUT.safetensors`` writes and
    ``modelbin search --embeddings`` reads. Build it once, save it, and each
    later query embeds only itself."""

    def __init__(self, native: "_native.NativeLineIndex") -> None:
        self._native = native
        # Models already checked against the index (the check hashes the
        # model file, so it is done once per model).
        self._checked: set = set()

    @classmethod
    def build(cls, embedder: SentenceEmbedder,
              files: "Sequence[str | os.PathLike[str]]") -> "LineIndex":
        """Embeds every non-empty line of ``files`` with ``embedder``."""
        return cls(_native.NativeLineIndex.build(embedder._native, embedder._path,
                                                 [os.fspath(f) for f in files]))

    @classmethod
    def load(cls, path: "str | os.PathLike[str]") -> "LineIndex":
        """Reads an index saved by :meth:`save` or ``modelbin embed``."""
        return cls(_native.NativeLineIndex.load(os.fspath(path)))

    def save(self, path: "str | os.PathLike[str]") -> None:
        """Writes the index (a safetensors file), atomically."""
        self._native.save(os.fspath(path))

    def __len__(self) -> int:
        return len(self._native)

    def search(self, embedder: SentenceEmbedder, query: str,
               top: int = 10) -> "List[Dict[str, Any]]":
        """The ``top`` lines closest to ``query``, best first, as dicts with
        ``score``, ``path``, ``line`` and ``text`` (what ``modelbin search
        --json`` prints). ``embedder`` must be the index's model."""
        if embedder._path not in self._checked:
            if not self._native.has_model(embedder._path):
                raise ValueError("the index holds embeddings of another model")
            self._checked.add(embedder._path)
        return [{"score": score, "path": os.fspath(path), "line": line, "text": text}
                for score, path, line, text in self._native.search(embedder._native, query, top)]

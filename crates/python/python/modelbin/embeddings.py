"""Sentence embeddings with sentence-transformers' names."""

from __future__ import annotations

import os
import sys
import json
from typing import Any, Dict, List, Optional, Sequence, Union

import numpy as np

from . import _native


def _saved_prompts(path: str) -> Dict[str, Any]:
    """The prompts a sentence-transformers model directory saved."""
    config = os.path.join(path, "config_sentence_transformers.json")
    if not os.path.isfile(config):
        return {}
    saved = json.loads(_native.read_config_text(config))
    return {"prompts": saved.get("prompts") or {},
            "default_prompt_name": saved.get("default_prompt_name")}


def _embedder(path: str, prompts: Dict[str, str],
              default_prompt_name: Optional[str]) -> "SentenceEmbedder":
    return SentenceEmbedder(path, prompts=prompts, default_prompt_name=default_prompt_name)


def quantize_embeddings(embeddings: Any, precision: str, *,
                        ranges: Optional[np.ndarray] = None,
                        calibration_embeddings: Optional[np.ndarray] = None) -> np.ndarray:
    """sentence-transformers' ``quantize_embeddings`` (6.2): ``"int8"`` and
    ``"uint8"`` cut each dimension's range (``ranges`` ``[2, dim]``, else
    the minimum and maximum of ``calibration_embeddings``, else of the
    embeddings themselves, which then must be more than one) into 256
    buckets and give each value its bucket (int8 offset by -128);
    ``"binary"`` (int8, offset by -128) and ``"ubinary"`` (uint8) pack the
    signs, 8 dimensions per byte; ``"float32"`` gives float32."""
    embeddings = np.asarray(embeddings)
    if precision not in ("float32", "int8", "uint8", "binary", "ubinary"):
        raise ValueError(f"Precision {precision!r} is not supported")
    if precision == "float32":
        return embeddings.astype(np.float32)
    if embeddings.ndim == 2 and embeddings.shape[0] == 0:
        dim = embeddings.shape[1]
        width = dim if precision in ("int8", "uint8") else (dim + 7) // 8
        return np.zeros((0, width), dtype=np.int8 if precision in ("int8", "binary") else np.uint8)
    if precision in ("int8", "uint8"):
        if ranges is None:
            sample = calibration_embeddings
            if sample is None:
                if embeddings.ndim == 1 or embeddings.shape[0] == 1:
                    raise ValueError(
                        f"Cannot compute {precision} quantization ranges from a single embedding; "
                        "pass ranges or calibration_embeddings")
                sample = embeddings
            ranges = np.vstack((np.min(sample, axis=0), np.max(sample, axis=0)))
        ranges = np.asarray(ranges).astype(np.float32, copy=False)
        starts = ranges[0, :]
        steps = (ranges[1, :] - starts) / 255
        steps = np.where(steps == 0, 1, steps)
        buckets = np.clip(np.floor((embeddings - starts) / steps), 0, 255)
        if precision == "uint8":
            return buckets.astype(np.uint8)
        return (buckets - 128).astype(np.int8)
    signs = np.packbits(embeddings > 0, axis=-1)
    if precision == "binary":
        return (signs - 128).astype(np.int8)
    return signs


def normalized_rows(embeddings: Any) -> np.ndarray:
    """``embeddings`` (numpy, a CPU torch tensor or nested lists; one
    vector or rows of them) as float32 rows of unit length, as
    sentence-transformers' ``normalize_embeddings`` makes them (a row's
    norm is at least 1e-12)."""
    if hasattr(embeddings, "detach"):
        embeddings = embeddings.detach().cpu().numpy()
    rows = np.atleast_2d(np.asarray(embeddings, dtype=np.float32))
    if rows.ndim != 2:
        raise ValueError(f"embeddings must be one vector or rows of them, not shape {rows.shape}")
    return rows / np.maximum(np.linalg.norm(rows, axis=1, keepdims=True), 1e-12)


class SentenceEmbedder:
    """A BERT sentence encoder from an ``.embd`` file or a Hugging Face /
    sentence-transformers model directory; its embeddings equal
    sentence-transformers' (cosine ≥ 0.9999 on the golden set).

    Thread-safe; the GIL is released while it runs. Pickles by path.
    """

    def __init__(self, model_name_or_path: "str | os.PathLike[str]", *,
                 prompts: Optional[Dict[str, str]] = None,
                 default_prompt_name: Optional[str] = None) -> None:
        self._path = os.fspath(model_name_or_path)
        self._native = _native.NativeEmbedder(self._path)
        saved = _saved_prompts(self._path)
        #: Named prompts for ``encode(prompt_name=...)``, merged as
        #: sentence-transformers merges them: ``"query"`` and ``"document"``
        #: (empty unless set), these, then the model directory's
        #: (``config_sentence_transformers.json``) where these set none.
        self.prompts: Dict[str, str] = {"query": None, "document": None, **(prompts or {})}
        for name, text in saved.get("prompts", {}).items():
            if self.prompts.get(name) is None:
                self.prompts[name] = text
        self.prompts = {name: text or "" for name, text in self.prompts.items()}
        #: The prompt ``encode`` uses when given none.
        self.default_prompt_name: Optional[str] = (
            default_prompt_name or saved.get("default_prompt_name"))
        if self.default_prompt_name is not None and self.default_prompt_name not in self.prompts:
            raise ValueError(f"default prompt {self.default_prompt_name!r} is not among the "
                             f"prompts {sorted(self.prompts)}")

    def __reduce__(self):
        return (_embedder, (self._path, self.prompts, self.default_prompt_name))

    @property
    def max_seq_length(self) -> int:
        """Longest input in tokens; longer texts are truncated."""
        return self._native.max_seq_length

    def get_sentence_embedding_dimension(self) -> int:
        """Width of the embeddings."""
        return self._native.dim

    def encode(self, sentences: Union[str, Sequence[str]], prompt_name: Optional[str] = None,
               prompt: Optional[str] = None, batch_size: int = 32,
               show_progress_bar: bool = False, output_value: str = "sentence_embedding",
               precision: str = "float32", convert_to_numpy: bool = True,
               convert_to_tensor: bool = False, normalize_embeddings: bool = False,
               truncate_dim: Optional[int] = None) -> Any:
        """Embeddings of ``sentences``, with sentence-transformers' arguments
        and defaults: float32 ``[n, dim]`` (``[dim]`` for a single string).
        The model's own normalisation applies (all-MiniLM-L6-v2's vectors
        are unit length); ``normalize_embeddings=True`` normalises after
        ``truncate_dim`` keeps the first dimensions. ``prompt`` (or the
        named ``prompt_name``) is put before every sentence. ``precision``
        quantizes as sentence-transformers' ``quantize_embeddings`` does
        (``"int8"``, ``"uint8"``, ``"binary"``, ``"ubinary"``).
        ``output_value="token_embeddings"`` gives each sentence's token
        vectors ``[tokens, hidden]`` instead. ``convert_to_tensor`` returns
        a torch tensor. Results do not depend on ``batch_size``: sentences
        are packed by length without padding."""
        single = isinstance(sentences, str)
        texts = [sentences] if single else list(sentences)
        prefix = self._prompt(prompt_name, prompt)
        if prefix:
            texts = [prefix + text for text in texts]
        if output_value == "token_embeddings":
            tokens = self._native.token_embeddings(texts)
            if convert_to_tensor:
                import torch
                tokens = [torch.from_numpy(t) for t in tokens]
            return tokens[0] if single else tokens
        if output_value != "sentence_embedding":
            raise ValueError(f"output_value={output_value!r}: modelbin gives "
                             "'sentence_embedding' or 'token_embeddings'")
        out = self._embed(texts, batch_size, show_progress_bar)
        if truncate_dim is not None:
            out = out[:, :truncate_dim]
        if normalize_embeddings and len(out):
            out = out / np.maximum(np.linalg.norm(out, axis=1, keepdims=True), 1e-12)
            out = out.astype(np.float32, copy=False)
        if precision != "float32":
            out = quantize_embeddings(out, precision)
        if convert_to_tensor:
            import torch
            tensor = torch.from_numpy(np.ascontiguousarray(out))
            return tensor[0] if single else tensor
        if single:
            return out[0]
        return out if convert_to_numpy else list(out)

    def encode_query(self, sentences: Union[str, Sequence[str]],
                     prompt_name: Optional[str] = None, prompt: Optional[str] = None,
                     **kwargs: Any) -> Any:
        """``encode`` for search queries, as sentence-transformers 6's:
        given neither ``prompt_name`` nor ``prompt``, the model's
        ``"query"`` prompt when it has one. Other arguments are
        ``encode``'s."""
        if prompt_name is None and prompt is None and "query" in self.prompts:
            prompt_name = "query"
        return self.encode(sentences, prompt_name=prompt_name, prompt=prompt, **kwargs)

    def encode_document(self, sentences: Union[str, Sequence[str]],
                        prompt_name: Optional[str] = None, prompt: Optional[str] = None,
                        **kwargs: Any) -> Any:
        """``encode`` for the documents searched, as sentence-transformers
        6's: given neither ``prompt_name`` nor ``prompt``, the first of the
        model's ``"document"``, ``"passage"`` and ``"corpus"`` prompts it
        has. Other arguments are ``encode``'s."""
        if prompt_name is None and prompt is None:
            prompt_name = next((name for name in ("document", "passage", "corpus")
                                if name in self.prompts), None)
        return self.encode(sentences, prompt_name=prompt_name, prompt=prompt, **kwargs)

    def _prompt(self, prompt_name: Optional[str], prompt: Optional[str]) -> str:
        if prompt is not None:
            return prompt
        name = prompt_name if prompt_name is not None else self.default_prompt_name
        if name is None:
            return ""
        if name not in self.prompts:
            raise ValueError(f"Prompt name '{name}' not found in the configured prompts "
                             f"dictionary with keys {sorted(self.prompts)!r}.")
        return self.prompts[name]

    def _embed(self, texts: List[str], batch_size: int, show_progress_bar: bool) -> np.ndarray:
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
        return np.concatenate(parts) if parts else np.zeros((0, dim), dtype=np.float32)

    def similarity(self, a: Any, b: Any) -> np.ndarray:
        """Cosine similarities of every row of ``a`` with every row of ``b``,
        ``[len(a), len(b)]`` (sentence-transformers' default
        ``similarity_fn_name``), as numpy float32."""
        return normalized_rows(a) @ normalized_rows(b).T

    def similarity_pairwise(self, a: Any, b: Any) -> np.ndarray:
        """Cosine similarity of each row of ``a`` with the same row of
        ``b``, ``[len(a)]`` (sentence-transformers'
        ``similarity_pairwise``), as numpy float32."""
        a, b = normalized_rows(a), normalized_rows(b)
        if a.shape != b.shape:
            raise ValueError(f"pairs need arrays of one shape, not {a.shape} and {b.shape}")
        return np.einsum("ij,ij->i", a, b)

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
              files: "Sequence[str | os.PathLike[str]]", *, jsonl: bool = False,
              field: str = "text", chunk_tokens: Optional[int] = None,
              overlap: Optional[int] = None) -> "LineIndex":
        """Embeds every non-empty line of ``files`` with ``embedder``.
        Directories give their .txt, .text, .md, .rst, .jsonl, .ndjson and
        .parquet files in sorted order; the lines of JSON Lines files
        (``jsonl``, or named ``*.jsonl`` / ``*.ndjson``) are read as their
        text: a JSON string, or an object's ``field``; the rows of Parquet
        files as their string column ``field``. With ``chunk_tokens=N``,
        each document (a plain file, a record, a row) is cut at word
        boundaries into chunks of at most N model tokens instead, each
        repeating up to ``overlap`` tokens (default N // 4) of the one
        before; a hit's ``line`` is where its chunk starts. As ``modelbin
        search --chunk-tokens N --overlap M``."""
        return cls(_native.NativeLineIndex.build(embedder._native, embedder._path,
                                                 [os.fspath(f) for f in files],
                                                 jsonl=jsonl, field=field,
                                                 chunk_tokens=chunk_tokens, overlap=overlap))

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

"""Helpers over embeddings, as ``sentence_transformers.util`` has them."""

from typing import Any, Dict, List, Union

import numpy as np

from .embeddings import normalized_rows

__all__ = ["semantic_search"]

#: Queries scored at once: bounds the score matrix held in memory to this
#: many rows by the corpus chunk.
QUERY_CHUNK = 100
#: Corpus rows scored at once.
CORPUS_CHUNK = 500_000


def semantic_search(query_embeddings: Any, corpus_embeddings: Any,
                    top_k: int = 10) -> List[List[Dict[str, Union[int, float]]]]:
    """The ``top_k`` corpus rows closest to each query by cosine
    similarity, as ``sentence_transformers.util.semantic_search`` gives
    them: per query, a list of ``{"corpus_id": int, "score": float}`` by
    decreasing score. Embeddings are numpy arrays, CPU torch tensors or
    lists; one query may be a single vector."""
    if top_k < 1:
        raise ValueError(f"top_k must be at least 1, not {top_k}")
    queries = normalized_rows(query_embeddings)
    corpus = normalized_rows(corpus_embeddings)
    if len(corpus) and queries.shape[1] != corpus.shape[1]:
        raise ValueError(f"queries of width {queries.shape[1]} against a corpus of width "
                         f"{corpus.shape[1]}")
    results: List[List[Dict[str, Union[int, float]]]] = []
    for start in range(0, len(queries), QUERY_CHUNK):
        chunk = queries[start:start + QUERY_CHUNK]
        best_ids = np.zeros((len(chunk), 0), dtype=np.int64)
        best_scores = np.zeros((len(chunk), 0), dtype=np.float32)
        for offset in range(0, len(corpus), CORPUS_CHUNK):
            scores = chunk @ corpus[offset:offset + CORPUS_CHUNK].T
            ids = np.broadcast_to(np.arange(offset, offset + scores.shape[1]), scores.shape)
            best_ids = np.concatenate([best_ids, ids], axis=1)
            best_scores = np.concatenate([best_scores, scores], axis=1)
            if best_scores.shape[1] > top_k:
                keep = np.argpartition(-best_scores, top_k - 1, axis=1)[:, :top_k]
                best_ids = np.take_along_axis(best_ids, keep, axis=1)
                best_scores = np.take_along_axis(best_scores, keep, axis=1)
        order = np.argsort(-best_scores, axis=1, kind="stable")
        for ids, scores in zip(np.take_along_axis(best_ids, order, axis=1),
                               np.take_along_axis(best_scores, order, axis=1)):
            results.append([{"corpus_id": int(i), "score": float(s)}
                            for i, s in zip(ids, scores)])
    return results

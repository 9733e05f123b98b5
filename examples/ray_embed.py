"""Embed sentences on a Ray cluster with Ray Data.

Each worker loads the model once (an actor per worker; the weights are
memory-mapped, so workers on one machine share them through the page
cache); the embeddings equal a single-process run.

    python examples/ray_embed.py MODEL_DIR_OR.embd sentences.txt out.npy
    python examples/ray_embed.py --address auto MODEL ...   # an existing cluster

See docs/scaling.md.
"""

from __future__ import annotations

import argparse
from typing import Dict, List

import numpy as np
import ray

import modelbin


class Embedder:
    """Embeds the ``text`` column of a batch (one model per actor)."""

    def __init__(self, model: str) -> None:
        self.model = modelbin.SentenceEmbedder(model)

    def __call__(self, batch: Dict[str, np.ndarray]) -> Dict[str, np.ndarray]:
        return {"index": batch["index"], "embedding": self.model.encode(list(batch["text"]))}


def embed(model: str, sentences: List[str], concurrency: int = 2) -> np.ndarray:
    """float32 ``[len(sentences), dim]``, in the order of ``sentences``."""
    items = [{"index": i, "text": text} for i, text in enumerate(sentences)]
    # Half a CPU per actor leaves room for Ray Data's read tasks: actors that
    # take every CPU starve them and the pipeline never starts.
    embedded = ray.data.from_items(items).map_batches(
        Embedder, fn_constructor_kwargs={"model": model},
        compute=ray.data.ActorPoolStrategy(size=concurrency), num_cpus=0.5,
        batch_size=64, batch_format="numpy")
    rows = sorted(embedded.iter_rows(), key=lambda row: row["index"])
    return np.stack([row["embedding"] for row in rows]).astype(np.float32)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("model")
    parser.add_argument("sentences", help="a text file, one sentence per line")
    parser.add_argument("out", help="where to save the embeddings (.npy)")
    parser.add_argument("--address", help="a Ray cluster to join (default: a local one)")
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()
    if args.address:
        ray.init(address=args.address)
    else:
        ray.init(num_cpus=args.workers, include_dashboard=False)
    with open(args.sentences, encoding="utf-8") as f:
        sentences = [line.rstrip("\n") for line in f]
    np.save(args.out, embed(args.model, sentences, args.workers))


if __name__ == "__main__":
    main()

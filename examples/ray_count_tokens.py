"""Count the tokens of a text corpus on a Ray cluster with Ray Data.

Each worker opens the encoding once (an actor per worker) and counts whole
files, so the total is exactly what ``modelbin tokens count`` gives for the
same files: the text is never cut where a token could cross (line-by-line
reading would drop the newlines and split tokens that span lines).

    python examples/ray_count_tokens.py docs/*.md                 # local Ray, 2 CPUs
    python examples/ray_count_tokens.py --address auto s3://...   # an existing cluster

See docs/scaling.md.
"""

from __future__ import annotations

import argparse
from typing import Dict, List

import numpy as np
import ray

import modelbin


class TokenCounter:
    """Counts the tokens of each file of a batch (one encoding per actor);
    bytes that are not UTF-8 count as U+FFFD, as the command line reads them."""

    def __init__(self, encoding: str) -> None:
        self.encoding = modelbin.get_encoding(encoding)

    def __call__(self, batch: Dict[str, np.ndarray]) -> Dict[str, np.ndarray]:
        counts = [self.encoding.count(bytes(data).decode("utf-8", errors="replace"))
                  for data in batch["bytes"]]
        return {"tokens": np.asarray(counts, dtype=np.int64)}


def count_tokens(paths: List[str], encoding: str = "o200k_base", concurrency: int = 2) -> int:
    """Tokens in the text files ``paths``: the sum of each file's count, as
    ``modelbin tokens count`` reports it."""
    files = ray.data.read_binary_files(paths)
    # Half a CPU per actor leaves room for Ray Data's read tasks: actors that
    # take every CPU starve them and the pipeline never starts.
    counted = files.map_batches(TokenCounter, fn_constructor_kwargs={"encoding": encoding},
                                compute=ray.data.ActorPoolStrategy(size=concurrency),
                                num_cpus=0.5, batch_size=16, batch_format="numpy")
    return int(counted.sum("tokens") or 0)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("paths", nargs="+")
    parser.add_argument("--encoding", default="o200k_base")
    parser.add_argument("--address", help="a Ray cluster to join (default: a local one)")
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()
    if args.address:
        ray.init(address=args.address)
    else:
        ray.init(num_cpus=args.workers, include_dashboard=False)
    print(count_tokens(args.paths, args.encoding, args.workers))


if __name__ == "__main__":
    main()

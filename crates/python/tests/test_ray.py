"""The Ray Data examples (examples/) on a local Ray instance: counts and
embeddings equal the single-process results."""

import json
import subprocess
import sys

import numpy as np
import pytest
import ray

import modelbin
from conftest import GOLDEN, REPO

sys.path.insert(0, str(REPO / "examples"))
import ray_count_tokens  # noqa: E402
import ray_embed  # noqa: E402


@pytest.fixture(scope="module")
def local_ray():
    # The examples are not installed modules: ship their actor classes to
    # the workers by value.
    for module in (ray_count_tokens, ray_embed):
        ray.cloudpickle.register_pickle_by_value(module)
    ray.init(num_cpus=2, include_dashboard=False, ignore_reinit_error=True,
             logging_level="ERROR", log_to_driver=False)
    yield
    ray.shutdown()


def test_token_counts_equal_the_command(local_ray, cli):
    paths = sorted(str(p) for p in (REPO / "docs" / "formats").glob("*.md"))
    done = subprocess.run([str(cli), "tokens", "count", "-e", "o200k_base", "--json", *paths],
                          capture_output=True, text=True, check=True)
    expected = json.loads(done.stdout)["total"]
    assert ray_count_tokens.count_tokens(paths, "o200k_base", concurrency=2) == expected


def test_embeddings_equal_one_process(local_ray, minilm_dir):
    with open(GOLDEN / "sentences.jsonl", encoding="utf-8") as f:
        sentences = [json.loads(line) for line in f.read().split("\n") if line]
    distributed = ray_embed.embed(str(minilm_dir), sentences, concurrency=2)
    single = modelbin.SentenceEmbedder(minilm_dir).encode(sentences)
    assert distributed.shape == single.shape
    np.testing.assert_allclose(distributed, single, atol=1e-6)

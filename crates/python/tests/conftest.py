"""Shared fixtures: where the real test data is (scripts/fetch-test-data.sh
puts it under target/test-data), and tiktoken reading its vocabularies from
there (the test machine reaches package registries only)."""

import hashlib
import os
import pathlib
import shutil

import pytest

REPO = pathlib.Path(__file__).resolve().parents[3]
TEST_DATA = REPO / "target" / "test-data"
TIKTOKEN_FILES = TEST_DATA / "tiktoken"
MINILM_DIR = TEST_DATA / "all-MiniLM-L6-v2"
GOLDEN = REPO / "tests" / "data" / "minilm"


def _tiktoken_cache() -> pathlib.Path:
    """tiktoken's cache directory, holding the real .tiktoken files under the
    names tiktoken gives their download addresses."""
    cache = TEST_DATA / "tiktoken-cache"
    cache.mkdir(parents=True, exist_ok=True)
    for name in ("cl100k_base", "o200k_base", "p50k_base", "r50k_base"):
        url = f"https://openaipublic.blob.core.windows.net/encodings/{name}.tiktoken"
        target = cache / hashlib.sha1(url.encode()).hexdigest()
        if not target.exists():
            shutil.copy(TIKTOKEN_FILES / f"{name}.tiktoken", target)
    return cache


os.environ["TIKTOKEN_CACHE_DIR"] = str(_tiktoken_cache())


@pytest.fixture(scope="session")
def minilm_dir() -> pathlib.Path:
    assert (MINILM_DIR / "model.safetensors").exists(), "run scripts/fetch-test-data.sh"
    return MINILM_DIR


@pytest.fixture(scope="session")
def cli() -> pathlib.Path:
    """The command line, as the test command builds it before running
    pytest (`cargo test --workspace`)."""
    binary = REPO / "target" / "debug" / "modelbin"
    assert binary.exists(), "build the command line first: cargo build -p modelbin"
    return binary

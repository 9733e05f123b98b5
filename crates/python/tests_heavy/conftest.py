"""The tests that need torch and the libraries built on it (SAELens,
sentence-transformers, transformers). scripts/test.sh runs them in the heavy
venv (scripts/heavy-venv.sh) after the light suite in crates/python/tests,
whose helper modules they share."""

import pathlib
import sys

import pytest

TESTS = pathlib.Path(__file__).resolve().parents[1] / "tests"
sys.path.insert(0, str(TESTS))

REPO = pathlib.Path(__file__).resolve().parents[3]
MINILM_DIR = REPO / "target" / "test-data" / "all-MiniLM-L6-v2"


@pytest.fixture(scope="session")
def minilm_dir() -> pathlib.Path:
    assert (MINILM_DIR / "model.safetensors").exists(), "run scripts/fetch-test-data.sh"
    return MINILM_DIR


@pytest.fixture(scope="session")
def cli() -> pathlib.Path:
    """The command line, as the test command builds it (`cargo test`)."""
    binary = REPO / "target" / "debug" / "modelbin"
    assert binary.exists(), "build the command line first: cargo build -p modelbin"
    return binary

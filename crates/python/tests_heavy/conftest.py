"""The tests that need torch and the libraries built on it (SAELens,
sentence-transformers, transformers). scripts/test.sh runs them in the heavy
venv (scripts/heavy-venv.sh) after the light suite in crates/python/tests,
whose fixtures and helper modules they share."""

import importlib.util
import pathlib
import sys

TESTS = pathlib.Path(__file__).resolve().parents[1] / "tests"
sys.path.insert(0, str(TESTS))

# The light suite's conftest, loaded under its own name (this file is
# `conftest` too): its fixtures become this directory's.
_spec = importlib.util.spec_from_file_location("light_conftest", TESTS / "conftest.py")
_light = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_light)

REPO = _light.REPO
minilm_dir = _light.minilm_dir
cli = _light.cli

"""The autoencoder layouts people download (Gemma Scope, Gemma Scope 2,
Llama Scope, sparsify), written in their own formats and computed by their
own readers (tests/reference/sae_layouts_reference.py: SAELens's loaders,
eai-sparsify), against `modelbin.sae.SAE.load` on the same directory and
`modelbin sae import`'s SAELens copy of it."""

import json
import pathlib
import subprocess
import sys

import numpy as np
import pytest

from modelbin.sae import SAE

REPO = pathlib.Path(__file__).resolve().parents[3]
LAYOUTS = ["gemma_scope", "gemma_scope_2", "llama_scope", "sparsify"]
TOLERANCE = 1e-5


@pytest.fixture(scope="module")
def layouts(tmp_path_factory):
    out = tmp_path_factory.mktemp("layouts")
    subprocess.run([sys.executable, str(REPO / "tests/reference/sae_layouts_reference.py"),
                    str(out)], check=True, capture_output=True)
    found = {}
    for expected in out.rglob("expected.json"):
        found[json.loads(expected.read_text())["layout"]] = expected.parent
    assert sorted(found) == sorted(LAYOUTS)
    return found


def worst(ours, theirs):
    """max |ours − theirs| over max(1, max |theirs|)."""
    return np.abs(ours - theirs).max() / max(1.0, np.abs(theirs).max())


@pytest.mark.parametrize("layout", LAYOUTS)
def test_each_layout_computes_as_its_own_reader(layouts, layout, tmp_path, cli):
    folder = layouts[layout]
    inputs = np.load(folder / "inputs.npy")
    expected = np.load(folder / "expected.npz")
    names = json.loads((folder / "expected.json").read_text())
    sae = SAE.load(folder)
    codes = sae.encode(inputs)
    assert worst(codes, expected["codes"]) <= TOLERANCE
    # The same latents fire.
    assert ((codes > 0) == (expected["codes"] > 0)).all()
    assert worst(sae.decode(codes), expected["reconstructions"]) <= TOLERANCE
    assert sae.cfg["metadata"]["layout"] == layout
    assert sae.cfg["hook_name"] == names["hook_name"]
    assert sae.cfg["model_name"] == names["model_name"]
    # Imported into SAELens's layout, it computes the same bytes.
    out = tmp_path / "imported"
    run = subprocess.run([cli, "sae", "import", folder, "-o", out, "--json"], check=True,
                         capture_output=True, text=True)
    summary = json.loads(run.stdout)
    assert summary["layout"] == layout and summary["hook_name"] == names["hook_name"]
    imported = SAE.load(out)
    assert imported.cfg["metadata"]["layout"] == layout
    np.testing.assert_array_equal(imported.encode(inputs), codes)
    np.testing.assert_array_equal(imported.decode(codes), sae.decode(codes))

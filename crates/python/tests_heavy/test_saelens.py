"""SAELens (the real library) loads every architecture `modelbin sae train`
writes, and computes the same codes and reconstructions."""

import numpy as np
import pytest
import torch
from sae_lens import SAE as SaeLensSAE

import modelbin
from sae_data import sine_dataset


@pytest.mark.parametrize("architecture, saelens_class", [
    ("topk", "TopKSAE"), ("batchtopk", "JumpReLUSAE"), ("relu", "StandardSAE")])
def test_saelens_loads_our_autoencoders_and_encodes_alike(tmp_path, architecture,
                                                         saelens_class):
    data = sine_dataset(tmp_path / "acts")
    ours = modelbin.sae.train(data, layer=-1, out=tmp_path / "sae", d_sae=64, k=4, steps=30,
                              batch_size=32, lr=3e-3, seed=7, threads=2,
                              architecture=architecture, progress=False)
    theirs = SaeLensSAE.load_from_disk(str(tmp_path / "sae"), device="cpu")
    assert type(theirs).__name__ == saelens_class
    assert (theirs.cfg.d_in, theirs.cfg.d_sae) == (ours.d_in, ours.d_sae)

    x = np.random.default_rng(0).normal(size=(200, ours.d_in)).astype(np.float32)
    with torch.no_grad():
        codes = theirs.encode(torch.from_numpy(x)).numpy()
        reconstructions = theirs.decode(torch.from_numpy(codes)).numpy()
    ours_codes = ours.encode(x)
    # The same latents fire; values agree to float32 rounding (the sums run
    # in another order).
    np.testing.assert_array_equal(ours_codes != 0, codes != 0)
    np.testing.assert_allclose(ours_codes, codes, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(ours.decode(ours_codes), reconstructions, rtol=1e-5, atol=1e-5)

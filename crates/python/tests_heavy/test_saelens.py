"""SAELens (the real library) loads every architecture `modelbin sae train`
writes, and computes the same codes and reconstructions."""

import numpy as np
import pytest
import torch
from sae_lens import SAE as SaeLensSAE

import modelbin
from sae_data import sine_dataset


@pytest.mark.parametrize("architecture, saelens_class", [
    ("topk", "TopKSAE"), ("batchtopk", "JumpReLUSAE"), ("relu", "StandardSAE"),
    ("jumprelu", "JumpReLUSAE")])
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


CONFIGURATIONS = [
    # (class, config keywords)
    ("StandardSAE", {"normalize_activations": "layer_norm"}),
    ("StandardSAE", {"apply_b_dec_to_input": False}),
    ("StandardSAE", {"normalize_activations": "constant_norm_rescale",
                     "apply_b_dec_to_input": False}),
    ("StandardSAE", {"normalize_activations": "expected_average_only_in"}),
    ("TopKSAE", {"k": 5, "rescale_acts_by_decoder_norm": True}),
    ("TopKSAE", {"k": 5, "normalize_activations": "layer_norm",
                 "apply_b_dec_to_input": False, "rescale_acts_by_decoder_norm": True}),
    ("JumpReLUSAE", {"normalize_activations": "layer_norm", "apply_b_dec_to_input": False}),
]


@pytest.mark.parametrize("saelens_class, keywords", CONFIGURATIONS)
def test_every_cfg_key_saelens_computes_with_is_honoured(tmp_path, saelens_class, keywords):
    """An autoencoder saved by SAELens itself with the cfg keys that change
    what it computes: modelbin's codes and reconstructions equal SAELens's
    encode/decode, and `sae eval` measures SAELens's reconstruction."""
    import sae_lens

    d_in, d_sae = 16, 48
    config_class = getattr(sae_lens, saelens_class + "Config")
    theirs = getattr(sae_lens, saelens_class)(config_class(d_in=d_in, d_sae=d_sae, **keywords))
    generator = torch.Generator().manual_seed(0)
    with torch.no_grad():
        for name, parameter in theirs.named_parameters():
            scale = 0.3 if name.startswith("b_") else 0.25
            parameter.copy_(torch.randn(parameter.shape, generator=generator) * scale)
        if saelens_class == "JumpReLUSAE":
            theirs.threshold.copy_(torch.rand(d_sae, generator=generator) * 0.5)
    theirs.save_model(str(tmp_path / "sae"))
    ours = modelbin.sae.SAE.load(tmp_path / "sae")

    x = (np.random.default_rng(1).normal(size=(300, d_in)) * 3 + 1).astype(np.float32)
    with torch.no_grad():
        codes = theirs.encode(torch.from_numpy(x)).numpy()
        reconstructions = theirs.decode(theirs.encode(torch.from_numpy(x))).numpy()
    ours_codes = ours.encode(x)
    # Within 1e-5 of the largest value (the sums run in another order).
    np.testing.assert_array_equal(ours_codes != 0, codes != 0)
    np.testing.assert_allclose(ours_codes, codes, rtol=0, atol=1e-5 * np.abs(codes).max())
    np.testing.assert_allclose(ours.forward(x), reconstructions, rtol=0,
                               atol=1e-5 * np.abs(reconstructions).max())

    # The dataset's layer -1 (CLS and patches) measured by `sae eval`,
    # against the same vectors reconstructed by SAELens.
    data = sine_dataset(tmp_path / "acts", d=d_in)
    rows = modelbin.saev.Dataset(data, layer=-1, patches="all")[:]
    with torch.no_grad():
        recon = theirs.decode(theirs.encode(torch.from_numpy(rows))).numpy().astype(np.float64)
    mse = float(np.mean((recon - rows) ** 2))
    measured = modelbin.sae.evaluate(ours, data, layer=-1, patches="all", progress=False)
    assert measured["vectors"] == len(rows)
    assert measured["mse"] == pytest.approx(mse, rel=1e-5)

"""modelbin.sae.SAE: SAELens-layout autoencoders on numpy arrays, encoded and
decoded by the engine. The engine sums in its own order, so values equal
the numpy definition to float32 rounding (rtol 1e-6) while the latents that
fire are exactly the definition's."""

import json
import os
import pickle
import subprocess
import sys

import numpy as np
import pytest

import modelbin
import modelbin.numpy as mnp


def assert_codes_equal(codes, expected):
    """The same latents fire, with values equal to float32 rounding."""
    np.testing.assert_array_equal(codes != 0, expected != 0)
    np.testing.assert_allclose(codes, expected, rtol=1e-6, atol=1e-6)


def write_sae(path, d_in=6, d_sae=10, k=3, seed=0, **cfg):
    rng = np.random.default_rng(seed)
    weights = {
        "W_enc": rng.standard_normal((d_in, d_sae), dtype=np.float32),
        "W_dec": rng.standard_normal((d_sae, d_in), dtype=np.float32),
        "b_enc": rng.standard_normal(d_sae, dtype=np.float32),
        "b_dec": rng.standard_normal(d_in, dtype=np.float32),
    }
    path.mkdir()
    mnp.save_file(weights, str(path / "sae_weights.safetensors"))
    config = {"architecture": "topk", "d_in": d_in, "d_sae": d_sae, "k": k, "dtype": "float32",
              "apply_b_dec_to_input": True, "normalize_activations": "none", **cfg}
    (path / "cfg.json").write_text(json.dumps(config))
    return weights


def test_encode_decode_equal_the_definition(tmp_path):
    w = write_sae(tmp_path / "sae")
    sae = modelbin.sae.SAE.load(tmp_path / "sae")
    assert (sae.d_in, sae.d_sae, sae.k) == (6, 10, 3)
    x = np.random.default_rng(1).standard_normal((5, 6), dtype=np.float32)
    pre = (x - w["b_dec"]) @ w["W_enc"] + w["b_enc"]
    expected = np.zeros_like(pre)
    for row in range(5):
        top = sorted(range(10), key=lambda j: (-pre[row, j], j))[:3]
        expected[row, top] = np.maximum(pre[row, top], 0)
    codes = sae.encode(x)
    assert_codes_equal(codes, expected)
    assert ((codes > 0).sum(axis=1) <= 3).all()
    # Terms of up to about 10 cancel here, so float32 rounding reaches 1e-6 absolute.
    np.testing.assert_allclose(sae.decode(codes), expected @ w["W_dec"] + w["b_dec"], rtol=1e-6,
                               atol=1e-5)
    np.testing.assert_allclose(sae(x), sae.forward(x))
    # Leading dimensions are kept: [batch, pos, d_in] -> [batch, pos, d_sae].
    assert sae.encode(x.reshape(5, 1, 6)).shape == (5, 1, 10)
    np.testing.assert_array_equal(pickle.loads(pickle.dumps(sae)).encode(x), codes)


def test_ties_go_to_the_lower_latent(tmp_path):
    path = tmp_path / "sae"
    path.mkdir()
    weights = {"W_enc": np.ones((2, 4), np.float32), "W_dec": np.eye(4, 2, dtype=np.float32),
               "b_enc": np.zeros(4, np.float32), "b_dec": np.zeros(2, np.float32)}
    mnp.save_file(weights, str(path / "sae_weights.safetensors"))
    (path / "cfg.json").write_text(json.dumps({"architecture": "topk", "d_in": 2, "d_sae": 4, "k": 2}))
    codes = modelbin.sae.SAE.load(path).encode(np.array([1.0, 2.0], np.float32))
    np.testing.assert_array_equal(codes, [3.0, 3.0, 0.0, 0.0])


def test_jumprelu_and_standard_fire_above_their_thresholds(tmp_path):
    w = write_sae(tmp_path / "relu", architecture="standard")
    x = np.random.default_rng(2).standard_normal((4, 6), dtype=np.float32)
    pre = (x - w["b_dec"]) @ w["W_enc"] + w["b_enc"]
    assert_codes_equal(modelbin.sae.SAE.load(tmp_path / "relu").encode(x), np.maximum(pre, 0))
    path = tmp_path / "jump"
    w = write_sae(path, architecture="jumprelu")
    threshold = np.linspace(-1, 1, 10, dtype=np.float32)
    mnp.save_file({**w, "threshold": threshold}, str(path / "sae_weights.safetensors"))
    sae = modelbin.sae.SAE.load(path)
    assert sae.architecture == "jumprelu"
    assert_codes_equal(sae.encode(x), np.where(pre > threshold, np.maximum(pre, 0), 0))


def test_bad_directories_are_value_errors(tmp_path):
    write_sae(tmp_path / "gated", architecture="gated")
    with pytest.raises(ValueError, match=r"architecture = \"gated\": not supported; expected standard, topk or jumprelu"):
        modelbin.sae.SAE.load(tmp_path / "gated")
    write_sae(tmp_path / "nothreshold", architecture="jumprelu")
    with pytest.raises(ValueError, match=r"lacks \['threshold'\]"):
        modelbin.sae.SAE.load(tmp_path / "nothreshold")
    write_sae(tmp_path / "lying", d_in=6)
    config = json.loads((tmp_path / "lying" / "cfg.json").read_text())
    config["d_sae"] = 11
    (tmp_path / "lying" / "cfg.json").write_text(json.dumps(config))
    with pytest.raises(ValueError, match="cfg.json says"):
        modelbin.sae.SAE.load(tmp_path / "lying")
    write_sae(tmp_path / "ok")
    with pytest.raises(ValueError, match="takes 6"):
        modelbin.sae.SAE.load(tmp_path / "ok").encode(np.zeros(5, np.float32))
    with pytest.raises(FileNotFoundError):
        modelbin.sae.SAE.load(tmp_path / "missing")


def test_the_native_autoencoder_refuses_shapes_it_cannot_run():
    from modelbin import _native

    w = np.zeros((6, 10), np.float32)
    cfg = json.dumps({"architecture": "topk", "d_in": 6, "d_sae": 10, "k": 3})
    with pytest.raises(ValueError, match=r"W_dec \[10, 5\].*are not those of d_in 6, d_sae 10"):
        _native.NativeSae(w, np.zeros((10, 5), np.float32), np.zeros(10, np.float32),
                          np.zeros(6, np.float32), None, cfg)
    with pytest.raises(ValueError, match="architecture = \"gated\""):
        _native.NativeSae(w, np.zeros((10, 6), np.float32), np.zeros(10, np.float32),
                          np.zeros(6, np.float32), None, cfg.replace("topk", "gated"))
    sae = _native.NativeSae(w, np.zeros((10, 6), np.float32), np.zeros(10, np.float32),
                            np.zeros(6, np.float32), None, cfg)
    with pytest.raises(ValueError, match="inputs of width 5"):
        sae.encode(np.zeros((2, 5), np.float32))
    with pytest.raises(ValueError, match="codes of width 6"):
        sae.decode(np.zeros((2, 6), np.float32))


def test_load_refuses_non_finite_weights_as_the_command_line_does(tmp_path):
    w = write_sae(tmp_path / "nan")
    w["W_dec"][:] = np.nan
    mnp.save_file(w, str(tmp_path / "nan" / "sae_weights.safetensors"))
    with pytest.raises(modelbin.FormatError, match=r"tensor `W_dec` holds NaN at element 0"):
        modelbin.sae.SAE.load(tmp_path / "nan")
    w = write_sae(tmp_path / "inf")
    w["b_enc"][3] = -np.inf
    mnp.save_file(w, str(tmp_path / "inf" / "sae_weights.safetensors"))
    with pytest.raises(modelbin.FormatError, match=r"tensor `b_enc` holds -inf at element 3"):
        modelbin.sae.SAE.load(tmp_path / "inf")


def test_load_refuses_a_fifo_config_at_once(tmp_path):
    """cfg.json as a FIFO with no writer: refused without opening it for
    reading (which would wait for a writer forever). Run in a child process
    with a timeout, so a regression fails instead of hanging the suite."""
    path = tmp_path / "fifo"
    write_sae(path)
    (path / "cfg.json").unlink()
    os.mkfifo(path / "cfg.json")
    script = (
        "import sys, modelbin\n"
        "try:\n"
        "    modelbin.sae.SAE.load(sys.argv[1])\n"
        "except OSError as e:\n"
        "    print(type(e).__name__, e)\n"
    )
    child = subprocess.run([sys.executable, "-c", script, str(path)], capture_output=True,
                           text=True, timeout=60)
    assert child.returncode == 0, child.stderr
    assert child.stdout.startswith("OSError ") and "is a FIFO" in child.stdout, child.stdout

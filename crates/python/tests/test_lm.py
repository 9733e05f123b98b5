"""modelbin.LanguageModel on a tiny random GPT-2 written without torch
(lm_data.py): the shapes and choices of its API, its errors, and its
agreement with `modelbin lm logits|generate`. Exactness against
transformers is crates/python/tests_heavy/test_lm.py."""

import json
import pickle
import subprocess

import numpy as np
import pytest

import modelbin
from lm_data import VOCAB, tiny_gpt2


@pytest.fixture(scope="module")
def gpt2(tmp_path_factory):
    return tiny_gpt2(tmp_path_factory.mktemp("lm") / "gpt2")


def test_config_and_tokenizer(gpt2):
    model = modelbin.LanguageModel(gpt2)
    c = model.config
    assert (c["model_type"], c["layers"], c["hidden"], c["vocab_size"]) == ("gpt2", 2, 8, VOCAB)
    assert c["eos_token_ids"] == [0] and not model.int8
    tokenizer = model.tokenizer
    assert (tokenizer.engine, tokenizer.n_vocab) == ("modelbin", VOCAB)
    text = "héllo 😀"
    assert tokenizer.encode(text) == list(text.encode()) == tokenizer.encode_ordinary(text)
    assert tokenizer.decode(tokenizer.encode(text)) == text
    assert tokenizer.decode([0xF0, 0x9F]) == "\ufffd"
    assert tokenizer.decode_single_token_bytes(0xE9) == b"\xe9"
    with pytest.raises(KeyError):
        tokenizer.decode_bytes([VOCAB])
    with pytest.raises(KeyError):
        tokenizer.decode_single_token_bytes(VOCAB)


def test_hidden_states_of_windows_equal_each_window_alone(gpt2):
    model = modelbin.LanguageModel(gpt2)
    windows = np.arange(30, dtype=np.int64).reshape(3, 10) * 7 % VOCAB
    last, first = model.hidden_states(windows, layers=[-1, 0])
    assert last.shape == first.shape == (3, 10, 8) and last.dtype == np.float32
    for w, window in enumerate(windows):
        (alone,) = model.hidden_states(list(window), layers=[1])
        np.testing.assert_allclose(last[w], alone, rtol=1e-5, atol=1e-5)
    pre, post = (model.hidden_states(windows[0], layers=[1], site=s)[0]
                 for s in ("resid_pre", "resid_post"))
    attn, mlp = (model.hidden_states(windows[0], layers=[1], site=s)[0]
                 for s in ("attn_out", "mlp_out"))
    # GPT-2's block: the output is the input plus the attention's and the MLP's.
    np.testing.assert_allclose(post, pre + attn + mlp, rtol=1e-4, atol=1e-4)


def test_bad_arguments_raise_value_errors(gpt2):
    model = modelbin.LanguageModel(gpt2)
    with pytest.raises(ValueError, match="resid_mid"):
        model.hidden_states([1, 2], site="resid_mid")
    with pytest.raises(ValueError, match="layer 2"):
        model.hidden_states([1, 2], layers=[2])
    with pytest.raises(ValueError, match="layer -3"):
        model.hidden_states([1, 2], layers=[-3])
    with pytest.raises(ValueError):
        model.logits([])
    with pytest.raises(ValueError):
        model.generate([1, 2], top_p=1.5)
    with pytest.raises(ValueError):
        model.generate([1, 2], top_k=0)


def test_files_that_are_not_a_model(tmp_path):
    with pytest.raises(FileNotFoundError):
        modelbin.LanguageModel(tmp_path / "missing")
    directory = tiny_gpt2(tmp_path / "bert")
    (directory / "config.json").write_text(json.dumps({"model_type": "bert"}))
    with pytest.raises(ValueError, match="bert"):
        modelbin.LanguageModel(directory)


def test_generation_stops_at_the_stop_ids_and_without_a_tokenizer_takes_ids(gpt2, tmp_path):
    model = modelbin.LanguageModel(gpt2)
    free = model.generate([5, 6, 7], max_tokens=8, stop=[])
    assert len(free.ids) == 8 and free.stopped == "max_tokens"
    assert free.text == model.tokenizer.decode(free.ids)
    cut = model.generate([5, 6, 7], max_tokens=8, stop=[free.ids[2]])
    assert cut.ids == free.ids[:free.ids.index(free.ids[2]) + 1] and cut.stopped == "stop_id"
    bare = modelbin.LanguageModel(tiny_gpt2(tmp_path / "bare", tokenizer=False))
    assert bare.tokenizer is None
    with pytest.raises(ValueError, match="tokenizer.json"):
        bare.generate("text")
    assert bare.generate(np.array([5, 6, 7]), max_tokens=3).text is None


def test_a_pickled_model_gives_the_same_logits(gpt2):
    model = modelbin.LanguageModel(gpt2, int8=True)
    again = pickle.loads(pickle.dumps(model))
    assert again.int8
    np.testing.assert_array_equal(again.logits([1, 2, 3]), model.logits([1, 2, 3]))
    assert pickle.loads(pickle.dumps(model.tokenizer)).encode("ab") == [97, 98]


def test_the_command_line_gives_the_same_logits_and_generation(gpt2, cli):
    model = modelbin.LanguageModel(gpt2)
    printed = subprocess.run([cli, "lm", "logits", "-m", gpt2, "--ids", "5,6,7"],
                             capture_output=True, check=True, text=True)
    np.testing.assert_allclose(json.loads(printed.stdout), model.logits([5, 6, 7])[-1],
                               rtol=1e-6, atol=1e-6)
    ours = model.generate("Hi", max_tokens=6, temperature=0.8, top_k=20, seed=3)
    printed = subprocess.run([cli, "lm", "generate", "-m", gpt2, "--prompt", "Hi",
                              "--max-tokens", "6", "--temperature", "0.8", "--top-k", "20",
                              "--seed", "3", "--json"],
                             capture_output=True, check=True, text=True)
    report = json.loads(printed.stdout)
    assert (report["ids"], report["text"], report["stopped"]) == tuple(ours)


def steering_sae(directory, model_dir, hook="blocks.0.hook_resid_post"):
    """A ReLU autoencoder on the tiny model's width whose cfg names its hook
    and the checkpoint it belongs to, as `modelbin sae train` writes them."""
    rng = np.random.default_rng(3)
    d_in, d_sae = 8, 16
    w_dec = rng.normal(size=(d_sae, d_in)).astype(np.float32)
    w_dec /= np.linalg.norm(w_dec, axis=1, keepdims=True)
    directory.mkdir(parents=True, exist_ok=True)
    modelbin.numpy.save_file({"W_enc": rng.normal(size=(d_in, d_sae)).astype(np.float32),
                              "W_dec": w_dec, "b_enc": np.zeros(d_sae, np.float32),
                              "b_dec": np.zeros(d_in, np.float32)},
                             directory / "sae_weights.safetensors")
    (directory / "cfg.json").write_text(json.dumps({
        "architecture": "standard", "d_in": d_in, "d_sae": d_sae, "dtype": "float32",
        "metadata": {"hook_name": hook, "model": modelbin.checkpoint_id(model_dir)}}))
    return directory


def test_steering_from_python_follows_the_library_rules(gpt2, tmp_path):
    model = modelbin.LanguageModel(gpt2)
    sae = steering_sae(tmp_path / "sae", gpt2)
    # A push that swamps the residual stream gives the same answer whether
    # its squares fit float32 (1e15) or not (1e30): the norms are exact.
    swamped = model.generate([5, 6], max_tokens=6, stop=[999], sae=sae, steer={3: 1e15})
    pushed = model.generate([5, 6], max_tokens=6, stop=[999], sae=sae, steer={3: 1e30})
    assert pushed.ids == swamped.ids
    with pytest.raises(ValueError, match="no longer finite in float32"):
        model.generate([5, 6], max_tokens=2, sae=sae, steer={3: 1e39})
    # An autoencoder trained on another model is refused by checkpoint.
    other = tiny_gpt2(tmp_path / "other", seed=50)
    foreign = steering_sae(tmp_path / "foreign", other)
    with pytest.raises(ValueError, match="was trained on sha256-tensors:"):
        model.generate([5], max_tokens=1, sae=foreign, steer={0: 1.0})

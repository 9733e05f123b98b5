"""Autoencoders on a decoder language model end to end: a random GPT-2 and
a random Llama (with a trained byte-level BPE tokenizer) recorded by
`acts record`, an autoencoder trained on the recording by `sae train`,
whose cfg SAELens 6.54 reads with the hook it needs; `sae eval --model`
(and `modelbin.sae.evaluate(model=)`) equal SAELens's reconstruction evals
computed with transformers on the dataset's own windows
(tests/reference/lm_sae_eval_reference.py); steering by α = 0 generates
what the plain model does, from the command line and from Python."""

import importlib.util
import json
import pathlib
import subprocess
import unicodedata

import numpy as np
import pytest
import torch
import transformers as tf
from sae_lens import SAE as SaeLensSAE
from sae_lens.util import get_special_token_ids
from test_record_lm import TEXTS, random_model

import modelbin

REPO = pathlib.Path(__file__).resolve().parents[3]
_spec = importlib.util.spec_from_file_location(
    "lm_sae_eval_reference", REPO / "tests/reference/lm_sae_eval_reference.py")
reference = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(reference)

WINDOW = 16
CE_WINDOWS = 6


# Format characters that print a glyph (prepended concatenation marks):
# the pages leave them as they are.
PRINTING_FORMAT = set("\u0600\u0601\u0602\u0603\u0604\u0605\u06dd\u070f\u0890\u0891\u08e2")
# Characters of other categories that render blank.
BLANK = set("\u034f\u115f\u1160\u2800\u3164\uffa0")


def visible(text: str) -> str:
    """`text` as the pages show it (docs/sae.md#features): a line break as
    ⏎, a tab as ⇥, any other control, format, separator or blank character
    but the space as its code point, `\\u{a0}`."""
    def shown(c):
        if c in "\n\t":
            return "⏎" if c == "\n" else "⇥"
        category = unicodedata.category(c)
        if c != " " and (category in ("Cc", "Zs", "Zl", "Zp") or c in BLANK
                         or category == "Cf" and c not in PRINTING_FORMAT):
            return f"\\u{{{ord(c):x}}}"
        return c
    return "".join(map(shown, text))


def alone(text: str) -> str:
    """A token shown by itself: visible, spaces as ␣, no text as ∅."""
    return visible(text).replace(" ", "␣") or "∅"


@pytest.mark.parametrize("family, site", [("gpt2", "resid_post"), ("llama", "mlp_out")])
def test_an_lm_autoencoder_is_hooked_evaluated_and_steered_as_saelens_would(
        tmp_path, cli, family, site):
    directory = tmp_path / "model"
    model = random_model(directory, family)
    recorded = modelbin.acts.record(directory, texts=TEXTS[:40], out=tmp_path / "acts",
                                    layers=[1], site=site, tokens_per_text=WINDOW,
                                    progress=False)
    dataset = pathlib.Path(recorded)
    sae_dir = tmp_path / "sae"
    modelbin.sae.train(dataset, layer=1, out=sae_dir, patches="image", d_sae=64, k=8,
                       steps=30, batch_size=64, progress=False)

    # SAELens reads the cfg, with the hook it would splice at.
    theirs = SaeLensSAE.load_from_disk(str(sae_dir), device="cpu")
    assert theirs.cfg.metadata.hook_name == f"blocks.1.hook_{site}"
    assert theirs.cfg.metadata.hook_head_index is None
    assert theirs.cfg.metadata.context_size == WINDOW
    assert theirs.cfg.metadata.prepend_bos is True
    assert theirs.cfg.metadata.model_name == "model"

    # sae eval --model: SAELens's evals on the dataset's first windows.
    args = [cli, "sae", "eval", sae_dir, dataset, "--layer", "1", "--model", directory,
            "--ce-windows", str(CE_WINDOWS), "--json"]
    ours = json.loads(subprocess.run([str(a) for a in args], check=True,
                                     capture_output=True, text=True).stdout)["cross_entropy"]
    python = modelbin.sae.evaluate(sae_dir, dataset, layer=1, model=directory,
                                   ce_windows=CE_WINDOWS, progress=False)["cross_entropy"]
    assert python == ours
    windows = np.fromfile(dataset / "tokens.bin", dtype="<u4").reshape(-1, WINDOW)
    tokens = torch.tensor(windows[:CE_WINDOWS].astype(np.int64))
    special = get_special_token_ids(tf.AutoTokenizer.from_pretrained(directory))
    expected = reference.recons_metrics(model, tokens, special, site, 1, theirs)
    assert ours["windows"] == CE_WINDOWS
    for key, value in expected.items():
        assert ours[key] == pytest.approx(value, abs=1e-4), key

    # α = 0 steers nothing: the plain generation, from Python and the CLI.
    lm = modelbin.lm.LanguageModel(directory)
    prompt = [int(i) for i in windows[0][:5]]
    plain = lm.generate(prompt, max_tokens=10)
    steered = lm.generate(prompt, max_tokens=10, sae=sae_dir, steer={3: 0.0})
    assert steered.ids == plain.ids
    pushed = lm.generate(prompt, max_tokens=10, sae=modelbin.sae.SAE.load(sae_dir),
                         steer={3: 50.0, 7: -20.0})
    ids = ",".join(map(str, prompt))
    generate = [cli, "lm", "generate", "-m", directory, "--ids", ids, "--max-tokens", "10",
                "--json"]
    line = json.loads(subprocess.run([str(a) for a in generate + ["--sae", sae_dir,
                                                                   "--steer", "3:0"]],
                                     check=True, capture_output=True, text=True).stdout)
    assert line["ids"] == plain.ids
    line = json.loads(subprocess.run(
        [str(a) for a in generate + ["--sae", sae_dir, "--steer", "3:50", "--steer", "7:-20"]],
        check=True, capture_output=True, text=True).stdout)
    assert line["ids"] == pushed.ids

    # A latent past the autoencoder's is refused, naming the flag.
    bad = subprocess.run([str(a) for a in generate + ["--sae", sae_dir, "--steer", "64:1"]],
                         capture_output=True, text=True)
    assert bad.returncode != 0 and "--steer 64" in bad.stderr
    with pytest.raises(ValueError, match="latent 64"):
        lm.generate(prompt, max_tokens=2, sae=sae_dir, steer={64: 1.0})


@pytest.mark.parametrize("family", ["gpt2", "llama"])
def test_lm_feature_pages_read_as_the_tokenizer_decodes_and_list_w_dec_through_w_u(
        tmp_path, family):
    directory = tmp_path / "model"
    model = random_model(directory, family)
    dataset = pathlib.Path(modelbin.acts.record(
        directory, texts=TEXTS[:40], out=tmp_path / "acts", layers=[1],
        tokens_per_text=WINDOW, progress=False))
    sae_dir = tmp_path / "sae"
    sae = modelbin.sae.train(dataset, layer=1, out=sae_dir, patches="image", d_sae=32, k=4,
                             steps=20, batch_size=64, progress=False)
    features = modelbin.sae.features(sae_dir, dataset, layer=1, model=directory, latents=6,
                                     html=tmp_path / "page.html", progress=False)
    hf = tf.AutoTokenizer.from_pretrained(directory)
    ids = np.fromfile(dataset / "tokens.bin", dtype="<u4")
    unembedding = model.get_output_embeddings().weight.detach().numpy().astype(np.float64)
    shown = 0
    for feature in features:
        # Each context's pieces read as the tokenizer decodes its ids.
        for context in feature["top"]:
            at = context["img"] * WINDOW + context["token"]
            start = max(0, at - 12)  # CONTEXT_BEFORE and CONTEXT_AFTER of features/mod.rs
            span = [int(i) for i in ids[start:at + 1 + 4]]
            assert context["at"] == at - start
            assert "".join(context["tokens"]) == visible(hf.decode(span))
            assert not any("Ġ" in piece for piece in context["tokens"])
            shown += 1
        # The raised and lowered tokens: W_dec[latent] @ W_U, in numpy.
        effects = np.asarray(sae.W_dec[feature["latent"]], dtype=np.float64) @ unembedding.T
        logits = feature["effects"]["logits"]
        for key, order in [("raised", np.argsort(-effects, kind="stable")),
                           ("lowered", np.argsort(effects, kind="stable"))]:
            listed = logits[key]
            assert [e["id"] for e in listed] == [int(i) for i in order[:len(listed)]], key
            for entry in listed:
                assert entry["value"] == pytest.approx(effects[entry["id"]], abs=1e-4)
                assert entry["token"] == alone(hf.decode([entry["id"]]))
    assert shown > 0
    page = (tmp_path / "page.html").read_text()
    assert "Ġ" not in page


def test_the_gemma_scope_walkthrough_of_docs_sae_md(tmp_path, cli):
    """docs/sae.md's "Gemma Scope on your CPU", with a random Gemma 3 model
    and a random Gemma Scope 2 autoencoder standing in for the downloads:
    recorded, evaluated (equal to SAELens's evals with its JumpReLUSAE on
    the same weights), browsed and steered."""
    model_dir = tmp_path / "gemma-3-270m"
    model = random_model(model_dir, "gemma3")
    scope = tmp_path / "gemma-scope-2-270m-pt" / "resid_post" / "layer_1_width_16k_l0_small"
    scope.mkdir(parents=True)
    rng = np.random.default_rng(5)
    weights = {"w_enc": rng.normal(0, 0.3, (32, 64)), "w_dec": rng.normal(0, 0.15, (64, 32)),
               "b_enc": rng.normal(0, 0.1, 64), "b_dec": rng.normal(0, 0.1, 32),
               "threshold": rng.uniform(0.05, 0.4, 64)}
    weights = {k: v.astype(np.float32) for k, v in weights.items()}
    from safetensors.numpy import save_file
    save_file(weights, scope / "params.safetensors")
    (scope / "config.json").write_text(json.dumps({
        "architecture": "jump_relu", "model_name": "gemma-v3-270m-pt",
        "hf_hook_point_in": "model.layers.1.output", "hf_hook_point_out": "model.layers.1.output",
        "width": 64, "l0": 10, "affine_connection": False, "type": "sae"}))
    texts = tmp_path / "texts.txt"
    texts.write_text("\n".join(TEXTS[:60]))

    def run(*args):
        return subprocess.run([str(a) for a in (cli, *args)], check=True, capture_output=True,
                              text=True).stdout

    acts = tmp_path / "acts"
    run("acts", "record", "-m", model_dir, "--layers", "1", "--site", "resid_post",
        "--tokens-per-text", WINDOW, "-o", acts, texts)
    dataset = next(p.parent for p in acts.rglob("metadata.json"))
    evaluated = json.loads(run("sae", "eval", scope, dataset, "--layer", "1", "--model",
                               model_dir, "--ce-windows", CE_WINDOWS, "--json"))
    from sae_lens import JumpReLUSAE, JumpReLUSAEConfig
    theirs = JumpReLUSAE(JumpReLUSAEConfig(d_in=32, d_sae=64, apply_b_dec_to_input=False))
    theirs.load_state_dict({"W_enc": torch.from_numpy(weights["w_enc"]),
                            "W_dec": torch.from_numpy(weights["w_dec"]),
                            "b_enc": torch.from_numpy(weights["b_enc"]),
                            "b_dec": torch.from_numpy(weights["b_dec"]),
                            "threshold": torch.from_numpy(weights["threshold"])})
    windows = np.fromfile(dataset / "tokens.bin", dtype="<u4").reshape(-1, WINDOW)
    tokens = torch.tensor(windows[:CE_WINDOWS].astype(np.int64))
    special = get_special_token_ids(tf.AutoTokenizer.from_pretrained(model_dir))
    expected = reference.recons_metrics(model, tokens, special, "resid_post", 1, theirs)
    for key, value in expected.items():
        assert evaluated["cross_entropy"][key] == pytest.approx(value, abs=1e-4), key
    page = tmp_path / "latents.html"
    run("sae", "features", scope, dataset, "--layer", "1", "--model", model_dir, "--html", page)
    assert page.stat().st_size > 0
    ids = ",".join(str(int(i)) for i in windows[0][:5])
    plain = json.loads(run("lm", "generate", "-m", model_dir, "--ids", ids, "--max-tokens", 8,
                           "--json"))
    same = json.loads(run("lm", "generate", "-m", model_dir, "--ids", ids, "--max-tokens", 8,
                          "--json", "--sae", scope, "--steer", "3:0"))
    assert same["ids"] == plain["ids"]
    pushed = json.loads(run("lm", "generate", "-m", model_dir, "--ids", ids, "--max-tokens", 8,
                            "--json", "--sae", scope, "--steer", "3:40"))
    assert len(pushed["ids"]) == 8

"""`modelbin acts record` over a decoder language model: the windows are
SAELens's (its own concat_and_batch_sequences on the Hugging Face
tokenizer's ids), and every recorded vector is transformers' at the hook
point (a forward hook on the block, its attention or its MLP), for a random
GPT-2 and a random Llama saved by transformers with a tokenizer trained by
the real tokenizers library."""

import json
import pathlib
import subprocess

import numpy as np
import pytest
import torch
import transformers as tf
from sae_lens.tokenization_and_batching import concat_and_batch_sequences
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

import modelbin

REPO = pathlib.Path(__file__).resolve().parents[3]
TEXTS = [line for line in (REPO / "tests/data/opticks.txt").read_text().splitlines()
         if line.strip()]


def tokenizer_files(directory: pathlib.Path, vocab: int) -> None:
    """A byte-level BPE tokenizer trained on the corpus, saved as
    transformers saves a tokenizer (tokenizer.json, tokenizer_config.json)."""
    bpe = Tokenizer(models.BPE())
    bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    bpe.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab, special_tokens=["<|endoftext|>"],
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    bpe.train_from_iterator(TEXTS[:2000], trainer)
    fast = tf.PreTrainedTokenizerFast(tokenizer_object=bpe, bos_token="<|endoftext|>",
                                      eos_token="<|endoftext|>")
    fast.save_pretrained(directory)


def random_model(directory: pathlib.Path, family: str) -> torch.nn.Module:
    torch.manual_seed(0)
    vocab = 400
    if family == "gpt2":
        model = tf.GPT2LMHeadModel(tf.GPT2Config(vocab_size=vocab, n_positions=64, n_embd=32,
                                                 n_layer=3, n_head=4, bos_token_id=0,
                                                 eos_token_id=0))
    elif family == "gemma3":
        # Gemma 3 270M's kind of block, small: a sliding window shorter than
        # the windows recorded, the first two layers sliding.
        model = tf.Gemma3ForCausalLM(tf.Gemma3TextConfig(
            vocab_size=vocab, hidden_size=32, num_hidden_layers=3, num_attention_heads=4,
            num_key_value_heads=1, head_dim=8, intermediate_size=48,
            max_position_embeddings=64, query_pre_attn_scalar=8, sliding_window=6,
            sliding_window_pattern=3, bos_token_id=0, eos_token_id=0, pad_token_id=0))
    else:
        model = tf.LlamaForCausalLM(tf.LlamaConfig(
            vocab_size=vocab, hidden_size=32, num_hidden_layers=3, num_attention_heads=4,
            num_key_value_heads=2, intermediate_size=48, max_position_embeddings=64,
            bos_token_id=0, eos_token_id=0))
    with torch.no_grad():
        for p in model.parameters():
            if p.dim() > 1:
                p.normal_(0, 0.2)
    model.eval()
    model.save_pretrained(directory)
    tokenizer_files(directory, vocab)
    return model


def blocks(model):
    return model.transformer.h if hasattr(model, "transformer") else model.model.layers


def hooked(model, windows: torch.Tensor, site: str, layers):
    """The rows at `site` of `layers` over `windows`, by forward hooks."""
    rows = {}

    def keep(layer):
        def hook(module, args, output):
            rows[layer] = (output[0] if isinstance(output, tuple) else output).detach()
        return hook

    def keep_input(layer):
        def hook(module, args):
            rows[layer] = args[0].detach()
        return hook

    handles = []
    for layer in layers:
        block = blocks(model)[layer]
        if site == "resid_post":
            handles.append(block.register_forward_hook(keep(layer)))
        elif site == "resid_pre":
            handles.append(block.register_forward_pre_hook(keep_input(layer)))
        elif site == "attn_out":
            attention = block.attn if hasattr(block, "attn") else block.self_attn
            handles.append(attention.register_forward_hook(keep(layer)))
        else:
            handles.append(block.mlp.register_forward_hook(keep(layer)))
    with torch.no_grad():
        model(windows)
    for handle in handles:
        handle.remove()
    return rows


@pytest.mark.parametrize("family, site, bos", [
    ("gpt2", "resid_post", True), ("llama", "attn_out", True), ("llama", "mlp_out", False)])
def test_a_language_model_recording_is_saelens_windows_through_transformers(
        tmp_path, cli, family, site, bos):
    directory = tmp_path / "model"
    model = random_model(directory, family)
    corpus = tmp_path / "texts.jsonl"
    texts = TEXTS[:40]
    corpus.write_text("".join(json.dumps({"text": t}) + "\n" for t in texts))
    window = 16
    args = [cli, "acts", "record", "-m", directory, "--layers", "0,-1", "--site", site,
            "--tokens-per-text", str(window), "-o", tmp_path / "acts", "--json", corpus]
    if not bos:
        args.insert(-1, "--no-bos")
    report = json.loads(subprocess.run([str(a) for a in args], check=True,
                                       capture_output=True, text=True).stdout)
    path = pathlib.Path(report["path"])
    metadata = json.loads((path / "metadata.json").read_text())
    assert metadata["vit_family"] == family
    assert metadata["data"]["site"] == site
    assert metadata["data"]["hook_names"] == [f"blocks.0.hook_{site}", f"blocks.2.hook_{site}"]

    # The windows: SAELens's own batching of the HF tokenizer's ids.
    hf = tf.AutoTokenizer.from_pretrained(directory)
    ids = [torch.tensor(hf(t)["input_ids"], dtype=torch.long) for t in texts]
    bos_id = hf.bos_token_id if bos else None
    expected = torch.stack(list(concat_and_batch_sequences(
        iter(ids), window, begin_batch_token_id=bos_id, begin_sequence_token_id=None,
        sequence_separator_token_id=bos_id)))
    recorded = np.fromfile(path / "tokens.bin", dtype="<u4").reshape(-1, window)
    np.testing.assert_array_equal(recorded, expected.numpy())
    assert report["images"] == len(expected)

    # Every vector is transformers' at the site.
    rows = hooked(model, expected, site, [0, 2])
    for layer, name in [(0, 0), (2, -1)]:
        dataset = modelbin.saev.Dataset(path, layer=name, patches="image")
        ours = np.stack([dataset.get(i, name, t) for i in range(len(expected))
                         for t in range(window)]).reshape(len(expected), window, -1)
        theirs = rows[layer].numpy()
        scale = np.abs(theirs).max()
        assert np.abs(ours - theirs).max() <= 1e-4 * scale, (layer, np.abs(ours - theirs).max())

    # Python records the same windows from the same texts in memory (a
    # dataset of its own: the texts are named by their hash, not a file).
    again = modelbin.acts.record(directory, texts=texts, out=tmp_path / "py", layers=[0, -1],
                                 site=site, bos=bos, tokens_per_text=window, progress=False)
    np.testing.assert_array_equal(
        np.fromfile(pathlib.Path(again) / "tokens.bin", dtype="<u4").reshape(-1, window),
        recorded)


def test_a_parquet_split_written_by_datasets_records_as_its_texts(tmp_path, cli):
    # Hugging Face datasets' own writer, with the text column beside others.
    import datasets

    directory = tmp_path / "model"
    random_model(directory, "gpt2")
    texts = TEXTS[:40]
    split = tmp_path / "train-00000-of-00001.parquet"
    datasets.Dataset.from_dict({"id": list(range(len(texts))), "text": texts}).to_parquet(split)
    corpus = tmp_path / "texts.jsonl"
    corpus.write_text("".join(json.dumps(t) + "\n" for t in texts))
    recorded, described = {}, {}
    for name, source in [("parquet", split), ("jsonl", corpus)]:
        args = [cli, "acts", "record", "-m", directory, "--tokens-per-text", "16", "-o",
                tmp_path / name, "--json", source]
        report = json.loads(subprocess.run([str(a) for a in args], check=True,
                                           capture_output=True, text=True).stdout)
        path = pathlib.Path(report["path"])
        recorded[name] = {p.relative_to(path): p.read_bytes() for p in path.rglob("*")
                          if p.is_file() and p.name != "metadata.json"}
        described[name] = json.loads((path / "metadata.json").read_text())["data"]["files"][0]
    assert recorded["parquet"] == recorded["jsonl"]
    assert described["parquet"]["parquet"] == {"column": "text", "texts": len(texts)}
    assert described["jsonl"]["json_lines"] == {"field": "text", "texts": len(texts)}

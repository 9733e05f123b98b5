"""modelbin.SentenceEmbedder against sentence-transformers' golden
embeddings of all-MiniLM-L6-v2 (tests/data/minilm)."""

import json
import pickle

import numpy as np
import pytest

import modelbin
from conftest import GOLDEN


def golden(name):
    with open(GOLDEN / name, encoding="utf-8") as f:
        return [json.loads(line) for line in f.read().split("\n") if line]


def test_embeddings_equal_sentence_transformers(minilm_dir):
    model = modelbin.SentenceEmbedder(minilm_dir)
    sentences, expected = golden("sentences.jsonl"), np.asarray(golden("embeddings.jsonl"), dtype=np.float32)
    got = model.encode(sentences, batch_size=8)
    assert got.dtype == np.float32 and got.shape == expected.shape
    cosine = np.sum(got * expected, axis=1) / np.linalg.norm(got, axis=1) / np.linalg.norm(expected, axis=1)
    assert cosine.min() >= 0.9999, cosine.min()
    one = model.encode(sentences[0])
    assert one.shape == (384,)
    np.testing.assert_allclose(one, got[0], atol=1e-6)
    assert model.get_sentence_embedding_dimension() == 384 and model.max_seq_length == 256


def test_tokens_similarity_and_pickling(minilm_dir):
    model = modelbin.SentenceEmbedder(minilm_dir)
    sentences, tokens = golden("sentences.jsonl")[:4], golden("tokens.jsonl")[:4]
    batch = model.tokenize(sentences)
    for row, ids in enumerate(tokens):
        assert batch["input_ids"][row, :len(ids)].tolist() == ids
        assert batch["attention_mask"][row].sum() == len(ids)
    vectors = model.encode(sentences)
    similarity = model.similarity(vectors, vectors)
    np.testing.assert_allclose(np.diag(similarity), 1.0, atol=1e-5)
    again = pickle.loads(pickle.dumps(model))
    np.testing.assert_array_equal(again.encode(sentences), vectors)


def test_a_file_that_is_not_a_model_is_named_in_the_error(tmp_path):
    notes = tmp_path / "notes.txt"
    notes.write_text("Products and notes\n")
    with pytest.raises(modelbin.FormatError, match=r"notes\.txt: bad magic") as raised:
        modelbin.SentenceEmbedder(str(notes))
    assert raised.value.path == str(notes)

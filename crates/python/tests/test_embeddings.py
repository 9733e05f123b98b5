"""modelbin.SentenceEmbedder against sentence-transformers' golden
embeddings of all-MiniLM-L6-v2 (tests/data/minilm)."""

import json
import pickle
import subprocess

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


def test_search_over_chunks_of_tokens_with_overlap(tmp_path, minilm_dir, cli):
    sentences = golden("sentences.jsonl")
    document = tmp_path / "notes.txt"
    document.write_text("\n".join(" ".join(sentences[i:i + 3]) for i in range(0, 24, 3)) + "\n")
    text = document.read_text()
    model = modelbin.SentenceEmbedder(minilm_dir)
    index = modelbin.LineIndex.build(model, [document], chunk_tokens=24, overlap=6)
    hits = index.search(model, "a man eating", top=len(index))
    chunks = sorted((text.index(hit["text"]), hit["text"], hit["line"]) for hit in hits)
    pieces = lambda t: len(model.tokenize([t])["input_ids"][0]) - 2  # noqa: E731
    words = text.split()
    covered = []
    for start, chunk, line in chunks:
        # A span of the file, of whole words, within the budget, numbered
        # by the line it starts on.
        assert text[start:start + len(chunk)] == chunk
        assert (start == 0 or text[start - 1].isspace()) and chunk == chunk.strip()
        assert pieces(chunk) <= 24 or len(chunk.split()) == 1
        assert line == text.count("\n", 0, start) + 1
        covered.append(chunk.split())
    # Together the chunks hold every word in order; each repeats at most 6
    # tokens of whole words from the one before.
    merged = covered[0]
    for before, after in zip(covered, covered[1:]):
        shared = next(n for n in range(len(after), -1, -1) if before[len(before) - n:] == after[:n])
        assert pieces(" ".join(after[:shared])) <= 6
        merged += after[shared:]
    assert merged == words
    # The command ranks the same chunks with the same scores.
    done = subprocess.run([str(cli), "search", "-m", str(minilm_dir), "-q", "a man eating",
                           "--chunk-tokens", "24", "--overlap", "6", "--top", str(len(index)),
                           "--json", str(document)], capture_output=True, text=True, check=True)
    theirs = [json.loads(line) for line in done.stdout.splitlines()]
    assert [(h["text"], h["line"]) for h in theirs] == [(h["text"], h["line"]) for h in hits]
    np.testing.assert_allclose([h["score"] for h in theirs], [h["score"] for h in hits],
                               atol=1e-6)
    with pytest.raises(ValueError, match="more than its overlap"):
        modelbin.LineIndex.build(model, [document], chunk_tokens=8, overlap=8)

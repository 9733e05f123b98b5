"""The real sentence-transformers loads what `convert --to
sentence-transformers` writes and embeds as modelbin does; SentenceEmbedder's
encode options (precision, prompts, truncation, token embeddings, tensors)
give what sentence-transformers gives."""

import json

import numpy as np
import pytest
import torch
from sentence_transformers import SentenceTransformer
from sentence_transformers.quantization import quantize_embeddings

import modelbin
from conftest import REPO

SENTENCES = [json.loads(line) for line in
             (REPO / "tests" / "data" / "minilm" / "sentences.jsonl").read_text().splitlines()]
SENTENCES += ["", "Ünïcödé, accents and 中文 characters.", "word " * 300]


def min_cosine(a, b):
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    return float(((a * b).sum(1) / np.linalg.norm(a, axis=1) / np.linalg.norm(b, axis=1)).min())


@pytest.fixture(scope="module")
def exported(tmp_path_factory, minilm_dir):
    """MiniLM converted to EMBD (f32 and int8) and each exported back."""
    root = tmp_path_factory.mktemp("export")
    out = {}
    for dtype in ("f32", "int8"):
        embd = root / f"minilm-{dtype}.embd"
        modelbin.convert(minilm_dir, embd, dtype=dtype, progress=False)
        report = modelbin.convert(embd, root / f"st-{dtype}", to="sentence-transformers",
                                  progress=False)
        assert report["to"] == "sentence-transformers" and report["tensors"] == 103
        out[dtype] = (embd, root / f"st-{dtype}")
    return out


def test_the_export_loads_in_sentence_transformers_and_embeds_alike(exported, minilm_dir):
    original = SentenceTransformer(str(minilm_dir), device="cpu")
    for dtype, (embd, directory) in exported.items():
        loaded = SentenceTransformer(str(directory), device="cpu")
        assert loaded.max_seq_length == original.max_seq_length
        assert loaded.tokenizer(SENTENCES)["input_ids"] == \
            original.tokenizer(SENTENCES)["input_ids"]
        ours = modelbin.SentenceEmbedder(embd).encode(SENTENCES)
        theirs = loaded.encode(SENTENCES)
        if dtype == "f32":
            # The same weights: the same vectors, and the original model's.
            assert min_cosine(ours, theirs) >= 0.99999
            assert min_cosine(theirs, original.encode(SENTENCES)) >= 0.99999
        else:
            # The int8 weights, dequantized, in float32: modelbin's int8
            # path also rounds activations to int8, within its bound of
            # 0.999 to float (docs/benchmarks.md).
            assert min_cosine(ours, theirs) >= 0.999


def test_a_model_directory_exports_directly(tmp_path, minilm_dir):
    report = modelbin.convert(minilm_dir, tmp_path / "st", to="sentence-transformers",
                              progress=False)
    assert report["from"] == "safetensors"
    loaded = SentenceTransformer(str(tmp_path / "st"), device="cpu")
    original = SentenceTransformer(str(minilm_dir), device="cpu")
    assert min_cosine(loaded.encode(SENTENCES), original.encode(SENTENCES)) >= 0.99999
    with pytest.raises(OSError, match="not empty"):
        modelbin.convert(minilm_dir, tmp_path / "st", to="sentence-transformers")
    with pytest.raises(ValueError, match="dtype"):
        modelbin.convert(minilm_dir, tmp_path / "other", to="sentence-transformers",
                         dtype="int8")
    assert not (tmp_path / "other").exists()


def test_encode_options_are_sentence_transformers(exported):
    embd, directory = exported["f32"]
    ours = modelbin.SentenceEmbedder(embd)
    theirs = SentenceTransformer(str(directory), device="cpu")
    texts = SENTENCES[:20]
    reference = theirs.encode(texts)
    for precision in ("int8", "uint8", "binary", "ubinary"):
        quantized = ours.encode(texts, precision=precision)
        expected = quantize_embeddings(ours.encode(texts), precision)
        assert quantized.dtype == expected.dtype, precision
        np.testing.assert_array_equal(quantized, expected)
        # Against sentence-transformers' own quantized output: the same
        # codes but where the float vectors differ in the last bits at a
        # bucket edge.
        their_codes = theirs.encode(texts, precision=precision)
        assert np.mean(quantized == their_codes) > 0.99
    for dim in (64, 128):
        assert min_cosine(ours.encode(texts, truncate_dim=dim),
                          theirs.encode(texts, truncate_dim=dim)) >= 0.99999
        normalized = ours.encode(texts, truncate_dim=dim, normalize_embeddings=True)
        np.testing.assert_allclose(np.linalg.norm(normalized, axis=1), 1, rtol=1e-5)
    prompts = {"query": "query: "}
    ours = modelbin.SentenceEmbedder(embd, prompts=prompts)
    theirs.prompts = prompts
    assert min_cosine(ours.encode(texts, prompt_name="query"),
                      theirs.encode(texts, prompt_name="query")) >= 0.99999
    assert min_cosine(ours.encode(texts, prompt="passage: "),
                      theirs.encode(texts, prompt="passage: ")) >= 0.99999
    with pytest.raises(ValueError, match="not found"):
        ours.encode(texts, prompt_name="missing")
    tensor = ours.encode(texts, convert_to_tensor=True)
    assert isinstance(tensor, torch.Tensor) and tensor.shape == reference.shape
    tokens = ours.encode(texts, output_value="token_embeddings")
    their_tokens = theirs.encode(texts, output_value="token_embeddings")
    for mine, other in zip(tokens, their_tokens):
        assert mine.shape == tuple(other.shape)
        assert min_cosine(mine, other.numpy()) >= 0.9999
    similarities = ours.similarity(reference, reference)
    np.testing.assert_allclose(similarities, theirs.similarity(reference, reference).numpy(),
                               rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("prompts, default", [
    ({}, None),
    ({"query": "query: ", "passage": "passage: ", "corpus": "corpus: "}, None),
    ({"document": "doc: ", "classify": "label: "}, "classify"),
])
def test_query_and_document_encoding_pick_prompts_as_sentence_transformers(
        exported, prompts, default):
    embd, directory = exported["f32"]
    ours = modelbin.SentenceEmbedder(embd, prompts=prompts, default_prompt_name=default)
    theirs = SentenceTransformer(str(directory), device="cpu", prompts=prompts,
                                 default_prompt_name=default)
    texts = SENTENCES[:12]
    for method in ("encode_query", "encode_document"):
        mine, other = getattr(ours, method)(texts), getattr(theirs, method)(texts)
        assert min_cosine(mine, other) >= 0.99999, method
        # The prompt chosen is the one sentence-transformers chooses: the
        # vectors differ from those of any other prompt far more than by
        # the engines' rounding.
        for name in [None, *prompts]:
            with_name = theirs.encode(texts, prompt_name=name) if name else \
                theirs.encode(texts, prompt="")
            if not np.allclose(with_name, other, atol=1e-4):
                assert min_cosine(mine, with_name) < 0.9999, (method, name)
    one = ours.encode_query("a single query")
    assert one.shape == (ours.get_sentence_embedding_dimension(),)


def test_similarities_and_semantic_search_equal_sentence_transformers(exported):
    from sentence_transformers import util

    embd, directory = exported["f32"]
    ours = modelbin.SentenceEmbedder(embd)
    theirs = SentenceTransformer(str(directory), device="cpu")
    corpus = ours.encode_document(SENTENCES)
    queries = ours.encode_query(["a sentence about weather", "numbers and code",
                                 "Ünïcödé characters"])
    np.testing.assert_allclose(ours.similarity_pairwise(corpus[:3], queries),
                               theirs.similarity_pairwise(corpus[:3], queries).numpy(),
                               rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(ours.similarity(queries, corpus),
                               theirs.similarity(queries, corpus).numpy(), rtol=1e-5, atol=1e-6)
    # Random embeddings too: no ties, several queries, top_k past the
    # corpus, a single vector as the query, torch tensors as inputs.
    rng = np.random.default_rng(0)
    cases = [(queries, corpus, 5), (queries[0], corpus, 3),
             (rng.standard_normal((7, 32), dtype=np.float32),
              rng.standard_normal((500, 32), dtype=np.float32), 10),
             (rng.standard_normal((2, 8), dtype=np.float32),
              rng.standard_normal((4, 8), dtype=np.float32), 9)]
    for query, documents, top_k in cases:
        mine = modelbin.util.semantic_search(query, documents, top_k=top_k)
        other = util.semantic_search(torch.from_numpy(np.asarray(query)),
                                     torch.from_numpy(documents), top_k=top_k)
        assert [[hit["corpus_id"] for hit in hits] for hits in mine] == \
            [[hit["corpus_id"] for hit in hits] for hits in other]
        for hits, their_hits in zip(mine, other):
            np.testing.assert_allclose([h["score"] for h in hits],
                                       [h["score"] for h in their_hits], rtol=1e-5, atol=1e-6)
    assert modelbin.util.semantic_search(torch.from_numpy(queries), torch.from_numpy(corpus)) == \
        modelbin.util.semantic_search(queries, corpus)
    with pytest.raises(ValueError, match="top_k must be at least 1"):
        modelbin.util.semantic_search(queries, corpus, top_k=0)

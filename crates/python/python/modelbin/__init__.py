"""modelbin: exact, fast readers and engines for the binary files of ML.

- Tokenizer, as ``tiktoken``: :func:`get_encoding`, :func:`encoding_for_model`,
  :func:`list_encoding_names`, :class:`Encoding` (``Encoding.load`` for a
  ``.bpe2`` or ``.tiktoken`` file), :func:`clear_piece_cache`.
- Sentence embeddings, as ``sentence-transformers``: :class:`SentenceEmbedder`,
  :func:`quantize_embeddings`; ``convert(..., to="sentence-transformers")``
  writes a model back as a sentence-transformers directory; search by
  meaning over text files: :class:`LineIndex`; over embeddings:
  :func:`modelbin.util.semantic_search`.
- Tensor files, as ``safetensors``: :mod:`modelbin.numpy`,
  :mod:`modelbin.torch` and :func:`safe_open`, over BinTensors,
  safetensors, EMBD and TLLM; :class:`SafetensorError`, :class:`TensorSpec`,
  :func:`serialize`, :func:`serialize_file`.
- SAEV activations for training loops: :mod:`modelbin.saev`; TopK sparse
  autoencoders in SAELens's layout: :class:`modelbin.sae.SAE`.
- TLLM models: :class:`TLLM`.
- Decoder language models from Hugging Face directories (GPT-2, Pythia,
  Llama, Mistral, Qwen2, Qwen3, Gemma 2, Gemma 3) and their ``tokenizer.json``: :class:`LanguageModel`,
  :class:`modelbin.lm.Tokenizer`.
- Vision transformers (DINOv2, CLIP, SigLIP), their hidden states and
  their inputs: :class:`modelbin.vision.VisionModel`,
  :class:`modelbin.vision.ImageProcessor`.
- Any file: :func:`verify` and :func:`inspect`; :func:`convert` between
  formats.
- Pricing: :func:`cost`, and :func:`count_messages` for chats.
- Workflows, through the same engine as the command line:
  :func:`modelbin.acts.record`, :func:`modelbin.sae.train`,
  :func:`modelbin.sae.evaluate`.

Every object pickles by path and options, so it can be shipped to worker
processes (multiprocessing, Ray); memory-mapped files are shared through the
page cache.
"""

from . import acts, lm, numpy, sae, saev, torch, util, vision
from ._files import checkpoint_id, convert, cost, count_messages, inspect, verify
from ._native import FormatError, SafetensorError, __version__
from ._serialize import TensorSpec, serialize, serialize_file
from .embeddings import LineIndex, SentenceEmbedder, quantize_embeddings
from .encoding import (
    Encoding,
    clear_piece_cache,
    encoding_for_model,
    get_encoding,
    list_encoding_names,
)
from .lm import LanguageModel
from .models import TLLM
from .tensors import safe_open

__all__ = [
    "Encoding",
    "FormatError",
    "LanguageModel",
    "LineIndex",
    "SafetensorError",
    "SentenceEmbedder",
    "TLLM",
    "TensorSpec",
    "checkpoint_id",
    "clear_piece_cache",
    "convert",
    "cost",
    "count_messages",
    "encoding_for_model",
    "get_encoding",
    "inspect",
    "list_encoding_names",
    "acts",
    "lm",
    "numpy",
    "quantize_embeddings",
    "sae",
    "saev",
    "safe_open",
    "serialize",
    "serialize_file",
    "torch",
    "util",
    "verify",
    "vision",
]


def __dir__() -> "list[str]":
    # The public names only, not the helpers and submodules imports leave.
    return sorted(__all__ + ["__version__"])

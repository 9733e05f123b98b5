"""Decoder language models (GPT-2, GPT-NeoX / Pythia, Llama, Mistral, Qwen2, Qwen3, Gemma 2, Gemma 3) from
Hugging Face model directories, and their ``tokenizer.json``.

:class:`LanguageModel` gives logits, the residual stream at SAELens's hook
points (:meth:`LanguageModel.hidden_states`) and generation, what
``modelbin lm logits|generate`` prints, through the same engine.
:class:`Tokenizer` encodes and decodes text as Hugging Face ``tokenizers``
does, with an API like :class:`modelbin.Encoding`'s.
"""

from __future__ import annotations

import json
import os
from typing import (TYPE_CHECKING, Any, Dict, List, Mapping, NamedTuple, Optional, Sequence,
                    Tuple, Union)

import numpy as np
import numpy.typing as npt

from . import _native

if TYPE_CHECKING:
    from .sae import SAE

__all__ = ["Generation", "LanguageModel", "Tokenizer"]

#: The sites :meth:`LanguageModel.hidden_states` reads, SAELens's
#: ``blocks.L.hook_<site>``.
SITES = ("resid_pre", "resid_post", "attn_out", "mlp_out")


class Tokenizer:
    """A Hugging Face tokenizer: a directory's ``tokenizer.json`` (and its
    ``tokenizer_config.json`` when present, for BOS and EOS). Byte-level BPE
    files run on modelbin's engine, others on Hugging Face's ``tokenizers``
    crate (:attr:`engine`); the ids equal ``tokenizers``'. Pickles by
    path."""

    def __init__(self, path: Union[str, "os.PathLike[str]"]) -> None:
        self._path = os.fspath(path)
        self._native = _native.NativeHfTokenizer(self._path)

    def __reduce__(self) -> Tuple[Any, Tuple[Any, ...]]:
        return (Tokenizer, (self._path,))

    def __repr__(self) -> str:
        return f"Tokenizer({self._path!r}, n_vocab={self.n_vocab}, engine={self.engine!r})"

    def encode(self, text: str, add_special_tokens: bool = True) -> List[int]:
        """The ids of ``text``, equal to ``tokenizers``'
        ``Tokenizer.encode(text, add_special_tokens).ids`` (and to
        transformers' ``tokenizer(text)["input_ids"]``): added and special
        tokens in the text are read as such, and with
        ``add_special_tokens`` the post-processor's tokens (a Llama BOS)
        are added."""
        return self._native.encode(text, add_special_tokens)

    def encode_batch(self, texts: Sequence[str],
                     add_special_tokens: bool = True) -> List[List[int]]:
        """:meth:`encode` of each of ``texts``, in order."""
        return [self.encode(text, add_special_tokens) for text in texts]

    def count(self, text: str, add_special_tokens: bool = True) -> int:
        """How many ids :meth:`encode` gives ``text`` (what ``modelbin tokens
        count --tokenizer`` counts)."""
        return len(self.encode(text, add_special_tokens))

    def encode_ordinary(self, text: str) -> List[int]:
        """The ids of ``text`` with special tokens' texts read as plain
        text, and no special tokens added."""
        return self._native.encode_ordinary(text)

    def decode_bytes(self, ids: Sequence[int]) -> bytes:
        """The bytes ``ids`` stand for, special tokens included; ``KeyError``
        for an id of no token."""
        return self._native.decode_bytes([int(i) for i in ids])

    def decode(self, ids: Sequence[int], errors: str = "replace") -> str:
        """The text of ``ids``: :meth:`decode_bytes` as UTF-8, invalid bytes
        handled as ``errors`` says (as tiktoken's ``decode``)."""
        return self.decode_bytes(ids).decode("utf-8", errors=errors)

    def decode_single_token_bytes(self, token: int) -> bytes:
        """One token's bytes (a byte-fallback token ``<0xHH>`` is its
        byte); ``KeyError`` for an id of no token."""
        piece = self._native.token_bytes(int(token))
        if piece is None:
            raise KeyError(f"Invalid token for decoding: {token}")
        return piece

    @property
    def n_vocab(self) -> int:
        """The highest id plus one, over the vocabulary and added tokens."""
        return self._native.n_vocab

    @property
    def bos_token_id(self) -> Optional[int]:
        """The BOS id SAELens prepends: ``tokenizer_config.json``'s
        ``bos_token``, else its ``eos_token``, else the post-processor's
        leading special token; ``None`` if there is none."""
        return self._native.bos_token_id

    @property
    def eos_token_id(self) -> Optional[int]:
        """``tokenizer_config.json``'s ``eos_token``, else the
        post-processor's trailing special token; ``None`` if there is
        none."""
        return self._native.eos_token_id

    @property
    def adds_bos(self) -> bool:
        """Whether ``encode(text)`` puts :attr:`bos_token_id` first."""
        return self._native.adds_bos

    @property
    def engine(self) -> str:
        """``"modelbin"`` (byte-level BPE) or ``"tokenizers"``."""
        return self._native.engine


class Generation(NamedTuple):
    """What :meth:`LanguageModel.generate` made."""

    #: The generated ids (the prompt not included; a stop id is kept last).
    ids: List[int]
    #: Their text, or ``None`` when the model directory has no tokenizer.
    text: Optional[str]
    #: Why it stopped: ``"max_tokens"`` or ``"stop_id"``.
    stopped: str


class LanguageModel:
    """A decoder language model loaded from a Hugging Face model directory
    (``config.json``, ``model.safetensors`` or its shards with
    ``model.safetensors.index.json``, and ``tokenizer.json`` for text):
    GPT-2, GPT-NeoX / Pythia, Llama (TinyLlama, SmolLM, Llama 3.x) or Qwen2,
    by ``config.json``'s ``model_type``. F16 and BF16 weights are widened to
    float32. ``int8=True`` runs the linear layers on int8 weights: faster,
    with logits about a percent from float32's. Thread-safe, the GIL
    released while it runs; pickles by path and options."""

    def __init__(self, path: Union[str, "os.PathLike[str]"], *, int8: bool = False) -> None:
        self._path = os.fspath(path)
        self._native = _native.NativeLanguageModel(self._path, int8)
        has_tokenizer = os.path.isfile(os.path.join(self._path, "tokenizer.json"))
        #: The directory's :class:`Tokenizer`, or ``None`` without a
        #: ``tokenizer.json``.
        self.tokenizer: Optional[Tokenizer] = Tokenizer(self._path) if has_tokenizer else None

    def __reduce__(self) -> Tuple[Any, Tuple[Any, ...]]:
        return (_reopen, (self._path, self.int8))

    def __repr__(self) -> str:
        c = self.config
        return (f"LanguageModel({self._path!r}, model_type={c['model_type']!r}, "
                f"layers={c['layers']}, hidden={c['hidden']})")

    @property
    def int8(self) -> bool:
        """Whether the linear layers run on int8 weights."""
        return self._native.int8

    @property
    def config(self) -> Dict[str, Any]:
        """What ``config.json`` says, once read: ``family``,
        ``model_type``, ``hidden``, ``layers``, ``heads``, ``kv_heads``,
        ``head_dim``, ``intermediate``, ``vocab_size``, ``max_positions``,
        ``bos_token_id``, ``eos_token_ids`` (a list) and
        ``tie_word_embeddings``."""
        return self._native.config

    def logits(self, ids: Sequence[int]) -> npt.NDArray[np.float32]:
        """float32 logits ``[len(ids), vocab_size]`` at every position of
        the sequence ``ids`` (from position 0), equal to transformers'
        ``model(ids).logits`` in float32."""
        return self._native.logits(_ids(ids))

    def hidden_states(self, ids: Union[Sequence[int], npt.ArrayLike],
                      layers: Sequence[int] = (-1,),
                      site: str = "resid_post") -> List[npt.NDArray[np.float32]]:
        """The residual stream at ``site`` of each of ``layers`` (blocks
        from 0; negative ones count from the end, ``-1`` the last): one
        float32 array per layer, in the order asked. ``ids`` is one
        sequence (the arrays are ``[len(ids), hidden]``) or a 2-D array of
        windows ``[n, window]``, each its own sequence from position 0 (the
        arrays are ``[n, window, hidden]``). Sites are SAELens's hook
        points ``blocks.L.hook_<site>``: ``resid_pre`` (the block's input),
        ``resid_post`` (its output, before any final norm: transformers'
        forward hook on the block module), ``attn_out`` and ``mlp_out``."""
        array = np.asarray(ids)
        if array.ndim == 2:
            n, window = array.shape
            states = self._native.hidden_states(_ids(array.reshape(-1)), window,
                                                [int(layer) for layer in layers], site)
            return [state.reshape(n, window, -1) for state in states]
        if array.ndim != 1:
            raise ValueError(f"ids must be one sequence or [n, window] windows, "
                             f"not shape {array.shape}")
        flat = _ids(array)
        return self._native.hidden_states(flat, max(len(flat), 1),
                                          [int(layer) for layer in layers], site)

    def generate(self, prompt: Union[str, Sequence[int]], max_tokens: int = 64,
                 temperature: float = 0.0, top_k: Optional[int] = None,
                 top_p: Optional[float] = None, seed: int = 0,
                 stop: Optional[Sequence[int]] = None,
                 sae: "Optional[SAE | str | os.PathLike[str]]" = None,
                 steer: Optional[Mapping[int, float]] = None) -> Generation:
        """Up to ``max_tokens`` tokens after ``prompt``, as ``modelbin lm
        generate`` makes them with the same arguments: a text prompt is
        encoded with the tokenizer's special tokens added (a Llama BOS
        first); a list is the ids. Temperature 0 (the default) is greedy
        and equals transformers' ``model.generate(do_sample=False)``;
        otherwise sampled with ``top_k``, ``top_p`` and ``seed``.
        Generation stops after an id of ``stop`` (default: the
        configuration's ``eos_token_ids``). Past the context the window
        slides. With ``sae`` (an autoencoder trained on this model, or its
        directory) and ``steer`` (``{latent: alpha}``), ``alpha`` times each
        latent's decoder row is added at the autoencoder's site (its cfg's
        ``hook_name``) at every position, as ``modelbin lm generate --sae
        DIR --steer LATENT:ALPHA`` does."""
        if isinstance(prompt, str):
            if self.tokenizer is None:
                raise ValueError(f"{self._path} has no tokenizer.json: give the prompt as ids")
            prompt_ids = self.tokenizer.encode(prompt, True)
        else:
            prompt_ids = _ids(prompt)
        stops = list(self.config["eos_token_ids"]) if stop is None else _ids(stop)
        steering = None
        if steer and sae is None:
            raise ValueError("steer= needs sae=: the autoencoder whose decoder rows are added")
        if sae is not None:
            from .sae import SAE
            loaded = sae if isinstance(sae, SAE) else SAE.load(sae)
            steering = (loaded._native,
                        [(int(latent), float(alpha)) for latent, alpha in (steer or {}).items()])
        ids, stopped = self._native.generate(prompt_ids, max_tokens,
                                             (temperature, top_k, top_p, seed), stops,
                                             steering)
        text = self.tokenizer.decode(ids) if self.tokenizer is not None else None
        return Generation(ids, text, stopped)


def _ids(ids: Any) -> List[int]:
    # A list of Python ints, as the native side takes them, from a list or
    # any integer array.
    return np.asarray(ids).reshape(-1).tolist()


def _reopen(path: str, int8: bool) -> LanguageModel:
    return LanguageModel(path, int8=int8)

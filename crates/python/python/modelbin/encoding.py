"""The tokenizer, with tiktoken's names and semantics."""

from __future__ import annotations

import functools
import os
import re
from typing import AbstractSet, Collection, List, Literal, Optional, Sequence, Union

import numpy as np

from . import _native

_BUILT_IN = ("cl100k_base", "o200k_base")


def _disallowed_special_error(token: str) -> ValueError:
    return ValueError(
        f"Encountered text corresponding to disallowed special token {token!r}.\n"
        "If you want this text to be encoded as a special token, "
        f"pass it to `allowed_special`, e.g. `allowed_special={{{token!r}, ...}}`.\n"
        f"If you want this text to be encoded as normal text, disable the check for this token "
        f"by passing `disallowed_special=(enc.special_tokens_set - {{{token!r}}})`.\n"
        "To disable this check for all special tokens, pass `disallowed_special=()`.\n"
    )


@functools.lru_cache(maxsize=128)
def _special_token_regex(tokens: frozenset) -> "re.Pattern[str]":
    return re.compile("|".join(re.escape(token) for token in tokens))


def _without_surrogates(text: str) -> str:
    """``text`` with lone surrogates replaced, as tiktoken does."""
    return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")


class Encoding:
    """A BPE encoding: exactly tiktoken's ids for cl100k_base, o200k_base,
    p50k_base and r50k_base (the last two loaded from their files).

    Thread-safe; the GIL is released while it encodes. Pickles by name (or
    by path and pattern for a loaded vocabulary).
    """

    def __init__(self, native: "_native.NativeEncoding", *, path: Optional[str] = None,
                 pattern: Optional[str] = None) -> None:
        self._native = native
        self._path = path
        self._pattern = pattern
        self._special_tokens = dict(native.special_tokens())

    @classmethod
    def load(cls, path: "str | os.PathLike[str]", *, pattern: Optional[str] = None) -> "Encoding":
        """A vocabulary file: ``.bpe2`` or ``.tiktoken`` (detected by content).
        A vocabulary that is not a known encoding needs its pre-tokenizer
        regex as ``pattern``."""
        path = os.fspath(path)
        return cls(_native.NativeEncoding.load(path, pattern), path=path, pattern=pattern)

    def __reduce__(self):
        if self._path is None:
            return (get_encoding, (self.name,))
        return (_load, (self._path, self._pattern))

    def __repr__(self) -> str:
        return f"<Encoding {self.name!r}>"

    @property
    def name(self) -> Optional[str]:
        """The encoding's name (``None`` for an unknown vocabulary)."""
        return self._native.name

    @property
    def n_vocab(self) -> int:
        """Highest token id + 1, special tokens included."""
        return self._native.n_vocab

    @property
    def max_token_value(self) -> int:
        """The highest token id."""
        return self.n_vocab - 1

    @property
    def eot_token(self) -> int:
        """The id of ``<|endoftext|>``."""
        return self._special_tokens["<|endoftext|>"]

    @property
    def special_tokens_set(self) -> set:
        """The texts of the special tokens."""
        return set(self._special_tokens)

    def _specials(self, texts: Sequence[str], allowed_special, disallowed_special) -> List[str]:
        """The allowed special tokens, after tiktoken's check that no
        disallowed one occurs in ``texts`` (``ValueError`` if one does)."""
        if allowed_special == "all":
            allowed_special = self.special_tokens_set
        if disallowed_special == "all":
            disallowed_special = self.special_tokens_set - set(allowed_special)
        if disallowed_special:
            regex = _special_token_regex(frozenset(disallowed_special))
            for text in texts:
                match = regex.search(text)
                if match:
                    raise _disallowed_special_error(match.group())
        return [token for token in allowed_special if token in self._special_tokens]

    def encode(self, text: str, *,
               allowed_special: Union[Literal["all"], AbstractSet[str]] = frozenset(),
               disallowed_special: Union[Literal["all"], Collection[str]] = "all") -> List[int]:
        """Ids of ``text``. Special tokens in ``allowed_special`` become their
        ids; one in ``disallowed_special`` (by default every special token
        not allowed) raises ``ValueError``; others are ordinary text."""
        allowed = self._specials([text], allowed_special, disallowed_special)
        try:
            return self._native.encode(text, allowed, [])
        except UnicodeEncodeError:
            return self._native.encode(_without_surrogates(text), allowed, [])

    def encode_ordinary(self, text: str) -> List[int]:
        """Ids of ``text``, special tokens treated as ordinary text."""
        try:
            return self._native.encode_ordinary(text)
        except UnicodeEncodeError:
            return self._native.encode_ordinary(_without_surrogates(text))

    def encode_to_numpy(self, text: str, *,
                        allowed_special: Union[Literal["all"], AbstractSet[str]] = frozenset(),
                        disallowed_special: Union[Literal["all"], Collection[str]] = "all") -> np.ndarray:
        """:meth:`encode` as a ``uint32`` numpy array."""
        allowed = self._specials([text], allowed_special, disallowed_special)
        if allowed:
            return np.asarray(self.encode(text, allowed_special=set(allowed),
                                          disallowed_special=()), dtype=np.uint32)
        try:
            return self._native.encode_to_numpy(text)
        except UnicodeEncodeError:
            return self._native.encode_to_numpy(_without_surrogates(text))

    def encode_batch(self, text: Sequence[str], *, num_threads: int = 8,
                     allowed_special: Union[Literal["all"], AbstractSet[str]] = frozenset(),
                     disallowed_special: Union[Literal["all"], Collection[str]] = "all") -> List[List[int]]:
        """:meth:`encode` of each text, in parallel in Rust."""
        texts = [_without_surrogates(t) for t in text]
        allowed = self._specials(texts, allowed_special, disallowed_special)
        return self._native.encode_batch(texts, allowed, [], max(1, num_threads))

    def encode_ordinary_batch(self, text: Sequence[str], *, num_threads: int = 8) -> List[List[int]]:
        """:meth:`encode_ordinary` of each text, in parallel in Rust."""
        return self.encode_batch(text, num_threads=num_threads, disallowed_special=())

    def count(self, text: str) -> int:
        """``len(encode_ordinary(text))``, without building the list."""
        try:
            return self._native.count(text)
        except UnicodeEncodeError:
            return self._native.count(_without_surrogates(text))

    def decode_bytes(self, tokens: Sequence[int]) -> bytes:
        """The bytes the ids stand for; ``KeyError`` for an unknown id."""
        return self._native.decode_bytes(list(tokens))

    def decode(self, tokens: Sequence[int], errors: str = "replace") -> str:
        """The text the ids stand for (invalid UTF-8 handled per ``errors``)."""
        return self.decode_bytes(tokens).decode("utf-8", errors=errors)

    def decode_single_token_bytes(self, token: int) -> bytes:
        """The bytes of one id."""
        return self.decode_bytes([token])

    def decode_tokens_bytes(self, tokens: Sequence[int]) -> List[bytes]:
        """The bytes of each id."""
        return [self.decode_single_token_bytes(token) for token in tokens]

    def decode_batch(self, batch: Sequence[Sequence[int]], *, errors: str = "replace",
                     num_threads: int = 8) -> List[str]:
        """:meth:`decode` of each sequence."""
        return [self.decode(tokens, errors=errors) for tokens in batch]


def _load(path: str, pattern: Optional[str]) -> Encoding:
    return Encoding.load(path, pattern=pattern)


@functools.lru_cache(maxsize=None)
def get_encoding(encoding_name: str) -> Encoding:
    """A built-in encoding: ``cl100k_base`` or ``o200k_base``. Others
    (p50k_base, r50k_base) load from their files with :meth:`Encoding.load`."""
    if encoding_name not in _BUILT_IN:
        raise ValueError(
            f"Unknown encoding {encoding_name}. Built in: {', '.join(_BUILT_IN)}; "
            "load other vocabularies with modelbin.Encoding.load(PATH)"
        )
    return Encoding(_native.NativeEncoding.built_in(encoding_name))


def encoding_for_model(model_name: str) -> Encoding:
    """The encoding of an OpenAI model (``KeyError`` for an unknown one)."""
    return get_encoding(_native.encoding_for_model(model_name))


def list_encoding_names() -> List[str]:
    """The built-in encodings."""
    return list(_BUILT_IN)


def clear_piece_cache() -> None:
    """Empties the calling thread's cache of recent pieces' tokens and frees
    its memory. Encoding never needs this: each thread remembers the tokens
    of the short pieces it merged, for whichever encoding, and a later piece
    gets exactly the same ids either way. It is for benchmarks that time
    text the cache has already seen, and for a thread done with tokenizing."""
    _native.clear_piece_cache()

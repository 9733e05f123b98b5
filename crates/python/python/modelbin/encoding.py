"""The tokenizer, with tiktoken's names and semantics."""

from __future__ import annotations

import functools
import os
from typing import AbstractSet, Collection, Dict, List, Literal, Optional, Sequence, Tuple, Union

import numpy as np

from . import _native

_BUILT_IN = tuple(_native.encoding_names())

AllowedSpecial = Union[Literal["all"], AbstractSet[str]]
DisallowedSpecial = Union[Literal["all"], Collection[str]]


def _without_surrogates(text: str) -> str:
    """``text`` with lone surrogates replaced, as tiktoken does."""
    return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")


def _texts_without_surrogates(texts: Sequence[str]) -> List[str]:
    return [_without_surrogates(text) for text in texts]


class Encoding:
    """A BPE encoding with exactly tiktoken's ids: one of tiktoken's built-in
    encodings (:func:`get_encoding`), a vocabulary file
    (:meth:`Encoding.load`), or a custom encoding made as tiktoken makes one::

        Encoding("cl100k_im", pat_str=base._pat_str,
                 mergeable_ranks=base._mergeable_ranks,
                 special_tokens={**base._special_tokens, "<|im_start|>": 100264})

    A custom encoding merges on the same tables as a built-in one, and a
    ``pat_str`` that is one of tiktoken's regexes runs on the built-in
    pre-tokenizer, so it encodes as fast.

    Thread-safe; the GIL is released while it encodes. Pickles by name, by
    path and pattern for a loaded vocabulary, or by its parts.
    """

    def __init__(self, name: str, *, pat_str: str, mergeable_ranks: Dict[bytes, int],
                 special_tokens: Dict[str, int], explicit_n_vocab: Optional[int] = None) -> None:
        native = _native.NativeEncoding.from_parts(mergeable_ranks, pat_str, special_tokens)
        if explicit_n_vocab:
            tokens = len(mergeable_ranks) + len(special_tokens)
            if tokens != explicit_n_vocab or native.n_vocab != explicit_n_vocab:
                raise ValueError(
                    f"explicit_n_vocab={explicit_n_vocab}, but there are {tokens} tokens "
                    f"and the highest id is {native.n_vocab - 1}"
                )
        self._setup(native, name)
        self._mergeable_ranks = mergeable_ranks
        self._special_tokens = dict(special_tokens)
        self._parts = True

    def _setup(self, native: "_native.NativeEncoding", name: Optional[str], *,
               path: Optional[str] = None, pattern: Optional[str] = None) -> None:
        self._native = native
        self.name = name
        self._path = path
        self._pattern = pattern
        self._parts = False
        self._special_tokens = dict(native.special_tokens())
        self._special_token_values = frozenset(self._special_tokens.values())

    @classmethod
    def _wrap(cls, native: "_native.NativeEncoding", name: Optional[str], **source) -> "Encoding":
        encoding = cls.__new__(cls)
        encoding._setup(native, name, **source)
        return encoding

    @classmethod
    def load(cls, path: "str | os.PathLike[str]", *, pattern: Optional[str] = None) -> "Encoding":
        """A vocabulary file: ``.bpe2`` or ``.tiktoken`` (detected by content).
        A vocabulary that is not a known encoding needs its pre-tokenizer
        regex as ``pattern``."""
        path = os.fspath(path)
        native = _native.NativeEncoding.load(path, pattern)
        return cls._wrap(native, native.name, path=path, pattern=pattern)

    def __reduce__(self):
        if self._parts:
            return (_from_parts, (self.name, self._pat_str, self._mergeable_ranks,
                                  self._special_tokens))
        if self._path is not None:
            return (_load, (self._path, self._pattern))
        return (get_encoding, (self.name,))

    def __repr__(self) -> str:
        return f"<Encoding {self.name!r}>"

    @property
    def _pat_str(self) -> str:
        """The pre-tokenizer's regex."""
        return self._native.pat_str

    @functools.cached_property
    def _mergeable_ranks(self) -> Dict[bytes, int]:
        """The mergeable tokens' bytes and ranks (special tokens excluded)."""
        return dict(self._native.mergeable_ranks())

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

    @functools.cached_property
    def special_tokens_set(self) -> set:
        """The texts of the special tokens."""
        return set(self._special_tokens)

    def is_special_token(self, token: int) -> bool:
        """Whether ``token`` is a special token's id."""
        if not isinstance(token, int):
            raise TypeError(f"a token id is an int, not {type(token).__name__}")
        return token in self._special_token_values

    def _specials(self, texts: Sequence[str], allowed_special: AllowedSpecial,
                  disallowed_special: DisallowedSpecial) -> List[str]:
        """The allowed special tokens, after tiktoken's check that no
        disallowed one occurs in ``texts`` (``ValueError`` if one does)."""
        if allowed_special == "all":
            allowed_special = self.special_tokens_set
        if disallowed_special == "all":
            disallowed_special = self.special_tokens_set - set(allowed_special)
        if disallowed_special:
            disallowed = list(disallowed_special)
            try:
                self._native.check_special(list(texts), disallowed)
            except UnicodeEncodeError:
                self._native.check_special(_texts_without_surrogates(texts), disallowed)
        return [token for token in allowed_special if token in self._special_tokens]

    # Encoding

    def encode(self, text: str, *, allowed_special: AllowedSpecial = frozenset(),
               disallowed_special: DisallowedSpecial = "all") -> List[int]:
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

    def encode_to_numpy(self, text: str, *, allowed_special: AllowedSpecial = frozenset(),
                        disallowed_special: DisallowedSpecial = "all") -> np.ndarray:
        """:meth:`encode` as a ``uint32`` numpy array."""
        allowed = self._specials([text], allowed_special, disallowed_special)
        if allowed:
            return self.encode_batch_to_numpy([text], allowed_special=set(allowed),
                                              disallowed_special=())[0]
        try:
            return self._native.encode_to_numpy(text)
        except UnicodeEncodeError:
            return self._native.encode_to_numpy(_without_surrogates(text))

    def encode_batch(self, text: Sequence[str], *, num_threads: int = 8,
                     allowed_special: AllowedSpecial = frozenset(),
                     disallowed_special: DisallowedSpecial = "all") -> List[List[int]]:
        """:meth:`encode` of each text, in parallel in Rust on ``num_threads``
        threads: at most 256 (``ValueError`` naming the limit before any
        thread starts). The pool of the last size asked for is kept, so
        repeated calls of one size start their threads once."""
        texts = _texts_without_surrogates(text)
        allowed = self._specials(texts, allowed_special, disallowed_special)
        return self._native.encode_batch(texts, allowed, [], max(1, num_threads))

    def encode_ordinary_batch(self, text: Sequence[str], *, num_threads: int = 8) -> List[List[int]]:
        """:meth:`encode_ordinary` of each text, in parallel in Rust."""
        return self.encode_batch(text, num_threads=num_threads, disallowed_special=())

    def encode_batch_to_numpy(self, text: Sequence[str], *, num_threads: int = 8,
                              allowed_special: AllowedSpecial = frozenset(),
                              disallowed_special: DisallowedSpecial = "all"
                              ) -> Tuple[np.ndarray, np.ndarray]:
        """:meth:`encode` of each text as flat arrays: every text's ids one
        after another (``uint32``), and where each text's ids start
        (``int64``, one more entry than texts; text ``i`` is
        ``ids[offsets[i]:offsets[i + 1]]``). No Python list is built; the
        texts are encoded in parallel in Rust, without the GIL."""
        allowed = self._specials(text, allowed_special, disallowed_special)
        threads = max(1, num_threads)
        try:
            return self._native.encode_batch_to_numpy(text, allowed, threads)
        except UnicodeEncodeError:
            return self._native.encode_batch_to_numpy(_texts_without_surrogates(text), allowed,
                                                      threads)

    def encode_ordinary_batch_to_numpy(self, text: Sequence[str], *, num_threads: int = 8
                                       ) -> Tuple[np.ndarray, np.ndarray]:
        """:meth:`encode_ordinary` of each text as flat arrays; see
        :meth:`encode_batch_to_numpy`."""
        return self.encode_batch_to_numpy(text, num_threads=num_threads, disallowed_special=())

    def count(self, text: str) -> int:
        """``len(encode_ordinary(text))``, without building the list."""
        try:
            return self._native.count(text)
        except UnicodeEncodeError:
            return self._native.count(_without_surrogates(text))

    def count_batch(self, text: Sequence[str], *, num_threads: int = 8) -> np.ndarray:
        """:meth:`count` of each text (``int64``), in parallel in Rust,
        without the GIL."""
        threads = max(1, num_threads)
        try:
            return self._native.count_batch(text, threads)
        except UnicodeEncodeError:
            return self._native.count_batch(_texts_without_surrogates(text), threads)

    def encode_single_token(self, text_or_bytes: Union[str, bytes]) -> int:
        """The id of the one token ``text_or_bytes`` is, special tokens
        included; ``KeyError`` if it is not a token."""
        token = text_or_bytes.encode("utf-8") if isinstance(text_or_bytes, str) else text_or_bytes
        found = self._native.encode_single_token(token)
        if found is None:
            raise KeyError(token)
        return found

    def encode_with_unstable(self, text: str, *, allowed_special: AllowedSpecial = frozenset(),
                             disallowed_special: DisallowedSpecial = "all"
                             ) -> Tuple[List[int], List[List[int]]]:
        """The ids of ``text`` that later text cannot change, and every way
        the rest may be tokenized once text follows (tiktoken's
        ``encode_with_unstable``): the stable ids decode to a prefix of
        ``text``, and the stable ids followed by any completion decode to
        bytes that start with ``text``."""
        allowed = self._specials([text], allowed_special, disallowed_special)
        try:
            return self._native.encode_with_unstable(text, allowed)
        except UnicodeEncodeError:
            return self._native.encode_with_unstable(_without_surrogates(text), allowed)

    def _encode_bytes(self, text: bytes) -> List[int]:
        """Ids of any bytes: valid UTF-8 as :meth:`encode_ordinary`; bytes
        after the valid prefix merged with its last piece."""
        return self._native.encode_bytes(text)

    def _encode_single_piece(self, text_or_bytes: Union[str, bytes]) -> List[int]:
        """Ids of ``text_or_bytes`` merged as one piece, without the
        pre-tokenizer's split (special tokens are ordinary text)."""
        piece = text_or_bytes.encode("utf-8") if isinstance(text_or_bytes, str) else text_or_bytes
        return self._native.encode_single_piece(piece)

    # Decoding

    def decode_bytes(self, tokens: Sequence[int]) -> bytes:
        """The bytes the ids stand for; ``KeyError`` for an unknown id."""
        return self._native.decode_bytes(list(tokens))

    def decode(self, tokens: Sequence[int], errors: str = "replace") -> str:
        """The text the ids stand for (invalid UTF-8 handled per ``errors``)."""
        return self.decode_bytes(tokens).decode("utf-8", errors=errors)

    def decode_single_token_bytes(self, token: int) -> bytes:
        """The bytes of one id; ``KeyError`` for an unknown id."""
        return self._native.decode_bytes([token])

    def decode_tokens_bytes(self, tokens: Sequence[int]) -> List[bytes]:
        """The bytes of each id."""
        return [self.decode_single_token_bytes(token) for token in tokens]

    def decode_with_offsets(self, tokens: Sequence[int]) -> Tuple[str, List[int]]:
        """The text the ids stand for (which must be valid UTF-8) and the
        character offset in it where each id's text begins. An id that
        starts inside a character (its first byte continues one) belongs to
        that character."""
        pieces = self.decode_tokens_bytes(tokens)
        offsets = []
        chars = 0
        for piece in pieces:
            continues = bool(piece) and 0x80 <= piece[0] < 0xC0
            offsets.append(max(0, chars - continues))
            chars += sum(1 for byte in piece if not 0x80 <= byte < 0xC0)
        return b"".join(pieces).decode("utf-8", errors="strict"), offsets

    def decode_batch(self, batch: Sequence[Sequence[int]], *, errors: str = "replace",
                     num_threads: int = 8) -> List[str]:
        """:meth:`decode` of each sequence."""
        return [self.decode(tokens, errors=errors) for tokens in batch]

    def decode_bytes_batch(self, batch: Sequence[Sequence[int]], *,
                           num_threads: int = 8) -> List[bytes]:
        """:meth:`decode_bytes` of each sequence."""
        return [self.decode_bytes(tokens) for tokens in batch]

    def token_byte_values(self) -> List[bytes]:
        """The bytes of every mergeable token, in byte order."""
        return sorted(self._mergeable_ranks)


def _load(path: str, pattern: Optional[str]) -> Encoding:
    return Encoding.load(path, pattern=pattern)


def _from_parts(name: str, pat_str: str, mergeable_ranks: Dict[bytes, int],
                special_tokens: Dict[str, int]) -> Encoding:
    return Encoding(name, pat_str=pat_str, mergeable_ranks=mergeable_ranks,
                    special_tokens=special_tokens)


@functools.lru_cache(maxsize=None)
def get_encoding(encoding_name: str) -> Encoding:
    """One of tiktoken's encodings, all built in: gpt2, r50k_base,
    p50k_base, p50k_edit, cl100k_base, o200k_base, o200k_harmony. Other
    vocabularies load with :meth:`Encoding.load`."""
    if encoding_name not in _BUILT_IN:
        raise ValueError(
            f"Unknown encoding {encoding_name}. Built in: {', '.join(_BUILT_IN)}; "
            "load other vocabularies with "
            "modelbin.Encoding.load(PATH)"
        )
    return Encoding._wrap(_native.NativeEncoding.built_in(encoding_name), encoding_name)


def encoding_name_for_model(model_name: str) -> str:
    """The name of the encoding tiktoken maps an OpenAI model to
    (``KeyError`` for an unknown one)."""
    return _native.encoding_for_model(model_name)


def encoding_for_model(model_name: str) -> Encoding:
    """The encoding of an OpenAI model (``KeyError`` for an unknown one)."""
    return get_encoding(encoding_name_for_model(model_name))


def list_encoding_names() -> List[str]:
    """The built-in encodings: all of tiktoken's."""
    return list(_BUILT_IN)


def clear_piece_cache() -> None:
    """Empties the calling thread's cache of recent pieces' tokens and frees
    its memory. Encoding never needs this: each thread remembers the tokens
    of the short pieces it merged, for whichever encoding, and a later piece
    gets exactly the same ids either way. It is for benchmarks that time
    text the cache has already seen, and for a thread done with tokenizing."""
    _native.clear_piece_cache()

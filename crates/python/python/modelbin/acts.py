"""Recording activations: a model's residual stream over text files, or a
vision transformer's over image files, written as a SAEV dataset (read it
with :mod:`modelbin.saev`, train on it with :func:`modelbin.sae.train`)."""

from __future__ import annotations

import json
import os
import warnings
from typing import Any, Callable, Dict, Optional, Sequence

from . import _native, _progress

__all__ = ["record", "Recorded", "RECORD_DEFAULTS"]

#: What :func:`record` takes for a keyword left as None: the library's
#: defaults, which ``modelbin acts record``'s flags take too.
RECORD_DEFAULTS: Dict[str, Any] = json.loads(_native.defaults())["acts_record"]


class Recorded(str):
    """The recorded dataset's directory (a ``str``), with the recording's
    ``summary``: the dict ``modelbin acts record --json`` prints (``path``,
    ``images``, ``tokens`` and ``windows_left`` (text: tokens recorded, whole
    windows ``max_tokens`` left), ``vectors``, ``skipped``, ``seconds``,
    ``vectors_per_second``, ``images_per_second``, ``skipped_files``,
    each a dict of ``path`` and ``reason``, and ``existing``: whether the
    same recording was found already done, so nothing was recomputed)."""

    summary: Dict[str, Any]


def _recorded(report: Dict[str, Any]) -> Recorded:
    path = Recorded(report["path"])
    path.summary = report
    return path


def record(model: "str | os.PathLike[str]",
           files: "Sequence[str | os.PathLike[str]]" = (), *,
           images: "Optional[Sequence[str | os.PathLike[str]]]" = None,
           out: "str | os.PathLike[str]", layers: Optional[Sequence[int]] = None,
           tokens_per_text: Optional[int] = None, cls: bool = False,
           max_patches_per_shard: Optional[int] = None, strict: bool = False,
           int8: bool = False, jsonl: bool = False, field: str = "text",
           site: Optional[str] = None, bos: bool = True,
           texts: Optional[Sequence[str]] = None, max_tokens: Optional[int] = None,
           progress: Optional[bool] = None) -> Recorded:
    """Records ``model`` at the blocks ``layers`` (-1 is the last) and writes
    the SAEV dataset ``out/<HASH>`` byte for byte as ``modelbin acts record``
    does with the same arguments; returns its path, whose ``summary`` is
    what ``acts record --json`` prints (see :class:`Recorded`). A keyword
    left as None takes the library's default, which the flag takes too
    (:data:`RECORD_DEFAULTS`: the last block, 2,400,000 vectors per shard,
    ``resid_post``).

    Over text ``files`` (concatenated in order and cut into windows of
    ``tokens_per_text`` tokens, default the model's context), ``model`` is a
    decoder language model's Hugging Face directory (GPT-2, GPT-NeoX,
    Llama, Mistral, Qwen2, Qwen3, Gemma 2, Gemma 3, with its tokenizer.json), a byte-level TLLM file or a BERT
    model (an EMBD file or a Hugging Face model directory); ``cls`` also
    keeps a BERT window's CLS row. ``texts`` (strings) may be given instead
    of files: each is one text, as a JSON Lines file's line is. A language
    model's windows (default 128 tokens) are cut as SAELens cuts them: each
    starts with the tokenizer's BOS token, which also separates texts
    (``bos=False`` turns both off); ``site`` is the hook point recorded
    (``resid_post``, the block's output before any final norm, or
    ``resid_pre``, ``attn_out``, ``mlp_out``), and ``int8`` runs its linear
    layers on int8 weights. A
    directory gives its .txt, .text, .md, .rst, .jsonl, .ndjson and .parquet
    files in sorted order. JSON Lines files (``jsonl``, or named ``*.jsonl``
    / ``*.ndjson``) give one text per line: a JSON string, or an object's
    ``field``; Parquet files (``*.parquet``) one per row of the string
    column ``field``. ``max_tokens`` records at most that many tokens (the
    first whole windows, in the input's order; SAELens's
    ``training_tokens``); ``summary["windows_left"]`` says how many whole
    windows of the input were left.

    Over ``images`` (image files, and directories walked in sorted order for
    .jpg, .jpeg and .png files), ``model`` is a vision transformer's Hugging
    Face directory (DINOv2, CLIP or SigLIP, with its
    ``preprocessor_config.json``): one SAEV image per file, its CLS token
    where the family has one, then its patches. A file that does not decode
    is skipped with a warning, or refused (``strict``); ``int8`` runs the
    linear layers on int8 weights (faster; activations about a percent from
    float32's).

    Recording the same model, inputs and settings again finds the dataset
    already written (its directory is the hash of what was recorded) and
    returns it at once, with ``summary["existing"]`` true.

    Ctrl-C stops between rounds (``KeyboardInterrupt``) and leaves nothing
    behind."""
    show = _progress.wanted(progress)
    if images is not None:
        if files or texts is not None:
            raise ValueError("give text files, texts= or images=, one of them")
        if max_tokens is not None:
            raise ValueError("max_tokens applies to text recordings")
        return _record_images(model, images, out=out, layers=layers,
                              max_patches_per_shard=max_patches_per_shard,
                              strict=strict, int8=int8, show=show)
    if texts is not None and files:
        raise ValueError("give text files or texts=, not both")
    if not files and texts is None:
        raise ValueError("no files to record: give text files, texts=, or images=")
    bar = _progress.Bar("recording", 0, "tokens") if show else None

    def step(done: int, total: int) -> None:
        assert bar is not None
        bar.update(done, total)

    try:
        report = _native.acts_record(
            os.fspath(model), [os.fspath(f) for f in files], os.fspath(out),
            layers=None if layers is None else list(layers), tokens_per_text=tokens_per_text,
            cls=cls,
            max_patches_per_shard=max_patches_per_shard, jsonl=jsonl, field=field,
            site=site, bos=bos, int8=int8, texts=None if texts is None else list(texts),
            max_tokens=max_tokens, progress=step if bar is not None else None)
    finally:
        if bar is not None:
            bar.close()
    return _recorded(json.loads(report))


def _record_images(model: "str | os.PathLike[str]",
                   images: "Sequence[str | os.PathLike[str]]", *,
                   out: "str | os.PathLike[str]", layers: Optional[Sequence[int]],
                   max_patches_per_shard: Optional[int], strict: bool, int8: bool,
                   show: bool) -> Recorded:
    bars: "dict[str, _progress.Bar]" = {}

    def stepper(desc: str, unit: str) -> "Callable[[int, int], None]":
        def step(done: int, total: int) -> None:
            if desc not in bars:
                bars[desc] = _progress.Bar(desc, total, unit)
            bars[desc].update(done, total)
        return step

    try:
        report = json.loads(_native.acts_record_images(
            os.fspath(model), [os.fspath(i) for i in images], os.fspath(out),
            layers=None if layers is None else list(layers),
            max_patches_per_shard=max_patches_per_shard,
            strict=strict, int8=int8,
            scan_progress=stepper("reading images", "files") if show else None,
            progress=stepper("recording", "images") if show else None))
    finally:
        for bar in bars.values():
            bar.close()
    for skipped in report["skipped_files"]:
        warnings.warn(f"skipped {skipped['path']}: {skipped['reason']}", stacklevel=3)
    return _recorded(report)

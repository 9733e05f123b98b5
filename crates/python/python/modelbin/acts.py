"""Recording activations: a model's residual stream over text files, written
as a SAEV dataset (read it with :mod:`modelbin.saev`, train on it with
:func:`modelbin.sae.train`)."""

from __future__ import annotations

import json
import os
from typing import Optional, Sequence

from . import _native, _progress

__all__ = ["record"]


def record(model: "str | os.PathLike[str]", files: "Sequence[str | os.PathLike[str]]", *,
           out: "str | os.PathLike[str]", layers: Sequence[int] = (-1,),
           tokens_per_text: Optional[int] = None, cls: bool = False,
           max_patches_per_shard: int = 2_400_000, progress: Optional[bool] = None) -> str:
    """Records ``model`` (a byte-level TLLM file, or a BERT model: an EMBD
    file or a Hugging Face model directory) over ``files``, concatenated in
    order and cut into windows of ``tokens_per_text`` tokens (default: the
    model's context), at the blocks ``layers`` (-1 is the last); ``cls``
    also keeps a BERT window's CLS row. Writes the SAEV dataset ``out/<HASH>``
    byte for byte as ``modelbin acts record`` does with the same arguments,
    and returns its path. Ctrl-C stops between rounds of windows
    (``KeyboardInterrupt``) and leaves nothing behind."""
    bar = _progress.Bar("recording", 0, "tokens") if _progress.wanted(progress) else None

    def step(done: int, total: int) -> None:
        assert bar is not None
        bar.update(done, total)

    try:
        report = _native.acts_record(
            os.fspath(model), [os.fspath(f) for f in files], os.fspath(out),
            layers=list(layers), tokens_per_text=tokens_per_text, cls=cls,
            max_patches_per_shard=max_patches_per_shard,
            progress=step if bar is not None else None)
    finally:
        if bar is not None:
            bar.close()
    return json.loads(report)["path"]

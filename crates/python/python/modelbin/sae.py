"""Sparse autoencoders saved in SAELens's layout (``cfg.json`` and
``sae_weights.safetensors``, as ``modelbin sae train`` writes them), with
``encode``/``decode``/``forward`` on numpy arrays.

The codes are SAELens's, from ``pre = (x − b_dec) @ W_enc + b_enc``:

- ``topk``: the ``k`` largest of ``relu(pre)`` (ties go to the lower latent
  index), zero elsewhere;
- ``jumprelu`` (how a BatchTopK autoencoder is saved): ``relu(pre)`` where
  ``pre > threshold``;
- ``standard`` (ReLU): ``relu(pre)``.

and ``x̂ = z @ W_dec + b_dec``.
"""

from __future__ import annotations

import json
import os
from typing import Any, Dict, Optional

import numpy as np

from . import numpy as mnp

__all__ = ["SAE", "ARCHITECTURES"]

#: The architectures read, by their SAELens names.
ARCHITECTURES = ("topk", "jumprelu", "standard")


class SAE:
    """A sparse autoencoder: ``W_enc [d_in, d_sae]``, ``W_dec [d_sae, d_in]``,
    ``b_enc [d_sae]``, ``b_dec [d_in]`` (float32), with ``architecture``
    ``topk`` (keeping ``k`` latents per input), ``jumprelu`` (with
    ``threshold [d_sae]``) or ``standard``. Pickles by value."""

    def __init__(self, W_enc: np.ndarray, W_dec: np.ndarray, b_enc: np.ndarray,
                 b_dec: np.ndarray, k: Optional[int], cfg: Dict[str, Any],
                 threshold: Optional[np.ndarray] = None) -> None:
        d_in, d_sae = W_enc.shape
        if W_dec.shape != (d_sae, d_in) or b_enc.shape != (d_sae,) or b_dec.shape != (d_in,):
            raise ValueError(f"inconsistent shapes: W_enc {W_enc.shape}, W_dec {W_dec.shape}, "
                             f"b_enc {b_enc.shape}, b_dec {b_dec.shape}")
        self.architecture = cfg.get("architecture", "topk")
        if self.architecture not in ARCHITECTURES:
            raise ValueError(f"architecture {self.architecture!r} is not one of {ARCHITECTURES}")
        if self.architecture == "topk" and (k is None or not 1 <= k <= d_sae):
            raise ValueError(f"k = {k} is not in [1, d_sae = {d_sae}]")
        if self.architecture == "jumprelu" and (threshold is None or threshold.shape != (d_sae,)):
            raise ValueError(f"a jumprelu autoencoder needs threshold [{d_sae}]")
        self.W_enc = np.ascontiguousarray(W_enc, dtype=np.float32)
        self.W_dec = np.ascontiguousarray(W_dec, dtype=np.float32)
        self.b_enc = np.ascontiguousarray(b_enc, dtype=np.float32)
        self.b_dec = np.ascontiguousarray(b_dec, dtype=np.float32)
        self.threshold = None if threshold is None else np.ascontiguousarray(threshold, np.float32)
        self.k = None if k is None else int(k)
        self.cfg = cfg

    @classmethod
    def load(cls, path: "str | os.PathLike[str]") -> "SAE":
        """Reads a directory holding ``cfg.json`` and ``sae_weights.safetensors``."""
        path = os.fspath(path)
        with open(os.path.join(path, "cfg.json"), encoding="utf-8") as f:
            cfg = json.load(f)
        architecture = cfg.get("architecture")
        if architecture not in ARCHITECTURES:
            raise ValueError(f"{path}: architecture {architecture!r} is not one of {ARCHITECTURES}")
        weights = mnp.load_file(os.path.join(path, "sae_weights.safetensors"))
        needed = {"W_enc", "W_dec", "b_enc", "b_dec"}
        if architecture == "jumprelu":
            needed.add("threshold")
        missing = needed - set(weights)
        if missing:
            raise ValueError(f"{path}: sae_weights.safetensors lacks {sorted(missing)}")
        sae = cls(weights["W_enc"], weights["W_dec"], weights["b_enc"], weights["b_dec"],
                  cfg.get("k"), cfg, weights.get("threshold"))
        if (sae.d_in, sae.d_sae) != (cfg.get("d_in"), cfg.get("d_sae")):
            raise ValueError(f"{path}: the weights are [{sae.d_in}, {sae.d_sae}], cfg.json says "
                             f"[{cfg.get('d_in')}, {cfg.get('d_sae')}]")
        return sae

    @property
    def d_in(self) -> int:
        """Input width."""
        return self.W_enc.shape[0]

    @property
    def d_sae(self) -> int:
        """Latents."""
        return self.W_enc.shape[1]

    def encode(self, x: np.ndarray) -> np.ndarray:
        """Latent activations ``[..., d_sae]`` of inputs ``[..., d_in]``."""
        x = np.asarray(x, dtype=np.float32)
        if x.shape[-1] != self.d_in:
            raise ValueError(f"inputs of width {x.shape[-1]}; this autoencoder takes {self.d_in}")
        pre = (x - self.b_dec) @ self.W_enc + self.b_enc
        if self.architecture == "standard":
            return np.maximum(pre, 0)
        if self.architecture == "jumprelu":
            return np.where(pre > self.threshold, np.maximum(pre, 0), 0).astype(np.float32)
        # A stable sort of −pre keeps the lower index first among ties.
        top = np.argsort(-pre, axis=-1, kind="stable")[..., : self.k]
        codes = np.zeros_like(pre)
        np.put_along_axis(codes, top, np.maximum(np.take_along_axis(pre, top, axis=-1), 0), axis=-1)
        return codes

    def decode(self, z: np.ndarray) -> np.ndarray:
        """Reconstructions ``[..., d_in]`` of latent activations ``[..., d_sae]``."""
        return np.asarray(z, dtype=np.float32) @ self.W_dec + self.b_dec

    def forward(self, x: np.ndarray) -> np.ndarray:
        """``decode(encode(x))``."""
        return self.decode(self.encode(x))

    __call__ = forward

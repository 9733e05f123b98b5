"""Sparse autoencoders saved in SAELens's layout (``cfg.json`` and
``sae_weights.safetensors``, as ``modelbin sae train`` writes them), with
``encode``/``decode``/``forward`` on numpy arrays through the engine's
kernels; :func:`train`, :func:`evaluate` and :func:`features` run what
``modelbin sae train``, ``sae eval`` and ``sae features`` run, with the same
arguments and results.

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
from html import escape as html_escape
from typing import Any, Callable, Dict, Optional

import numpy as np

from . import _native, _progress

__all__ = ["SAE", "ARCHITECTURES", "TRAIN_DEFAULTS", "Feature", "train", "evaluate", "features"]


#: The architectures read, by their SAELens names.
ARCHITECTURES = ("topk", "jumprelu", "standard")

#: What :func:`train` takes for a keyword left as None: the library's
#: defaults, which ``modelbin sae train``'s flags take too.
TRAIN_DEFAULTS: Dict[str, Any] = json.loads(_native.defaults())["sae_train"]


class SAE:
    """A sparse autoencoder: ``W_enc [d_in, d_sae]``, ``W_dec [d_sae, d_in]``,
    ``b_enc [d_sae]``, ``b_dec [d_in]`` (float32), with ``architecture``
    ``topk`` (keeping ``k`` latents per input), ``jumprelu`` (with
    ``threshold [d_sae]``) or ``standard``, and ``cfg``, its ``cfg.json``:
    every key of it that changes what SAELens computes
    (``apply_b_dec_to_input``, ``normalize_activations``,
    ``rescale_acts_by_decoder_norm``, ...) is honoured, or refused with
    ``ValueError`` naming it, as ``modelbin sae`` does. Pickles by value."""

    def __init__(self, W_enc: np.ndarray, W_dec: np.ndarray, b_enc: np.ndarray,
                 b_dec: np.ndarray, k: Optional[int], cfg: Dict[str, Any],
                 threshold: Optional[np.ndarray] = None) -> None:
        W_enc = np.ascontiguousarray(W_enc, dtype=np.float32)
        if W_enc.ndim != 2:
            raise ValueError(f"W_enc of shape {W_enc.shape}: expected [d_in, d_sae]")
        # The arrays say the widths, and k the keyword gives; the rest of
        # the configuration is read by the engine.
        full = dict(cfg)
        full.setdefault("architecture", "topk")
        full["d_in"], full["d_sae"] = W_enc.shape
        if k is not None:
            full["k"] = int(k)
        self._build(W_enc, W_dec, b_enc, b_dec, threshold, cfg, full, None)

    def _build(self, W_enc: np.ndarray, W_dec: np.ndarray, b_enc: np.ndarray,
               b_dec: np.ndarray, threshold: Optional[np.ndarray], cfg: Dict[str, Any],
               read: Dict[str, Any], path: Optional[str]) -> None:
        self.W_enc = np.ascontiguousarray(W_enc, dtype=np.float32)
        self.W_dec = np.ascontiguousarray(W_dec, dtype=np.float32)
        self.b_enc = np.ascontiguousarray(b_enc, dtype=np.float32)
        self.b_dec = np.ascontiguousarray(b_dec, dtype=np.float32)
        self.threshold = None if threshold is None else np.ascontiguousarray(threshold, np.float32)
        self._native = _native.NativeSae(self.W_enc, self.W_dec, self.b_enc, self.b_dec,
                                         self.threshold, json.dumps(read), path)
        self.architecture = self._native.architecture
        self.k = self._native.k
        self.cfg = cfg
        #: The directory it was loaded from (None when built from arrays).
        self.path: Optional[str] = path
        #: What training it measured (``train``'s result only).
        self.summary: Optional[Dict[str, Any]] = None

    def __getstate__(self) -> Dict[str, Any]:
        state = dict(self.__dict__)
        del state["_native"]
        return state

    def __setstate__(self, state: Dict[str, Any]) -> None:
        cfg = state["cfg"]
        read = dict(cfg)
        read.setdefault("architecture", state["architecture"])
        read["d_in"], read["d_sae"] = state["W_enc"].shape
        if state["k"] is not None:
            read["k"] = state["k"]
        self._build(state["W_enc"], state["W_dec"], state["b_enc"], state["b_dec"],
                    state["threshold"], cfg, read, state["path"])
        self.summary = state["summary"]

    @classmethod
    def load(cls, path: "str | os.PathLike[str]") -> "SAE":
        """Reads the autoencoder in a directory with the loader the
        ``modelbin sae`` commands use, its layout detected: SAELens's
        (``cfg.json``, ``sae_weights.safetensors``), Gemma Scope's
        ``params.npz``, Gemma Scope 2's ``params.safetensors``, Llama Scope's
        ``hyperparams.json``, sparsify's ``cfg.json`` + ``sae.safetensors``
        (docs/sae.md, "Downloaded autoencoders"); ``cfg`` is then SAELens's
        configuration of it. A configuration must be a regular file of at
        most 1 MiB (a FIFO or device raises ``OSError`` at once), the weights
        must match it, and weights holding a NaN or an infinity raise
        :class:`modelbin.FormatError`."""
        path = os.fspath(path)
        W_enc, W_dec, b_enc, b_dec, threshold, cfg_text = _native.sae_load(path)
        cfg = json.loads(cfg_text)
        sae = cls.__new__(cls)
        sae._build(W_enc, W_dec, b_enc, b_dec, threshold, cfg, cfg, path)
        return sae

    @classmethod
    def load_from_disk(cls, path: "str | os.PathLike[str]") -> "SAE":
        """SAELens's name for :meth:`load`."""
        return cls.load(path)

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
        rows = np.ascontiguousarray(x.reshape(-1, self.d_in))
        return self._native.encode(rows).reshape(*x.shape[:-1], self.d_sae)

    def decode(self, z: np.ndarray) -> np.ndarray:
        """Reconstructions ``[..., d_in]`` of latent activations ``[..., d_sae]``."""
        z = np.asarray(z, dtype=np.float32)
        if z.shape[-1] != self.d_sae:
            raise ValueError(f"codes of width {z.shape[-1]}; this autoencoder has {self.d_sae}")
        rows = np.ascontiguousarray(z.reshape(-1, self.d_sae))
        return self._native.decode(rows).reshape(*z.shape[:-1], self.d_in)

    def forward(self, x: np.ndarray) -> np.ndarray:
        """``decode(encode(x))``, with an input normalisation undone per
        input (``normalize_activations``: ``decode`` alone cannot)."""
        x = np.asarray(x, dtype=np.float32)
        if x.shape[-1] != self.d_in:
            raise ValueError(f"inputs of width {x.shape[-1]}; this autoencoder takes {self.d_in}")
        rows = np.ascontiguousarray(x.reshape(-1, self.d_in))
        return self._native.forward(rows).reshape(*x.shape[:-1], self.d_in)

    __call__ = forward


def train(dataset: "str | os.PathLike[str]", *, layer: int, out: "str | os.PathLike[str]", patches: str = "image",
          d_sae: Optional[int] = None, architecture: Optional[str] = None,
          k: Optional[int] = None, l1_coeff: Optional[float] = None,
          l0_coeff: Optional[float] = None, bandwidth: Optional[float] = None,
          steps: Optional[int] = None, batch_size: Optional[int] = None,
          lr: Optional[float] = None, seed: Optional[int] = None,
          aux_k: Optional[int] = None, dead_after: Optional[int] = None,
          threads: Optional[int] = None, checkpoint_every: Optional[int] = None,
          resume: bool = False,
          force: bool = False, progress: Optional[bool] = None,
          on_step: Optional[Callable[[Dict[str, Any]], None]] = None) -> SAE:
    """Trains a sparse autoencoder on one layer of a SAEV dataset and saves
    it in ``out`` (SAELens's layout); what ``modelbin sae train`` does with the
    same arguments (the keyword arguments are its flags; one left as None
    takes the library's default, the flag's default: :data:`TRAIN_DEFAULTS`),
    and with the same seed and threads the saved tensors are bit-identical.

    ``architecture`` is ``"topk"``, ``"batchtopk"``, ``"relu"`` (with
    ``l1_coeff``) or ``"jumprelu"`` (with ``l0_coeff`` and ``bandwidth``, as
    SAELens trains it); ``patches`` is ``"image"``, ``"cls"`` or ``"all"``. A
    checkpoint is written every ``checkpoint_every`` steps and at the end;
    ``resume=True`` continues the run whose checkpoint is in ``out``, and
    ``force=True`` replaces an autoencoder already there. ``on_step`` gets
    each step's report (``step``, ``mse``, ``fvu``, ``l0``,
    ``dead_fraction``, ``aux_mse``). Ctrl-C stops between steps
    (``KeyboardInterrupt``), leaving only the last checkpoint. The summary
    ``sae train --json`` prints is the returned autoencoder's ``summary``.
    """
    total = TRAIN_DEFAULTS["steps"] if steps is None else steps
    reports = _progress.Steps(progress, total,
                              lambda r: f"fvu {r['fvu']:.3f}, L0 {r['l0']:.1f}", on_step)
    try:
        summary = _native.sae_train(
            os.fspath(dataset), layer, os.fspath(out), patches_name=patches, d_sae=d_sae,
            architecture=architecture, k=k, l1_coeff=l1_coeff, l0_coeff=l0_coeff,
            bandwidth=bandwidth, steps=steps,
            batch_size=batch_size, lr=lr, seed=seed, aux_k=aux_k, dead_after=dead_after,
            threads=threads, checkpoint_every=checkpoint_every, resume=resume, force=force,
            progress=reports.callback)
    finally:
        reports.close()
    sae = SAE.load(out)
    sae.summary = json.loads(summary)
    return sae


def evaluate(sae: "SAE | str | os.PathLike[str]", dataset: "str | os.PathLike[str]", *, layer: int,
             patches: str = "image", batch_size: Optional[int] = None,
             threads: Optional[int] = None,
             model: "Optional[str | os.PathLike[str]]" = None, ce_windows: int = 64,
             progress: Optional[bool] = None) -> Dict[str, Any]:
    """Measures an autoencoder (loaded, or its directory) on one layer of a
    SAEV dataset: the dict ``modelbin sae eval --json`` prints (``vectors``,
    ``mse``, ``explained_variance``, ``l0``, ``dead_fraction``,
    ``density_histogram``). With ``model`` (the model the dataset was
    recorded from: a TLLM file or a language model's directory), also
    ``cross_entropy``: the loss clean, with the reconstruction spliced in at
    the recorded site and with the site zeroed, the share recovered, and the
    KL to the clean model, over the first ``ce_windows`` windows, as
    SAELens's evals compute them (``modelbin sae eval --model``)."""
    source = sae._native if isinstance(sae, SAE) else os.fspath(sae)
    callback, bar = _progress.bytes_callback(progress, "evaluating")
    try:
        result = _native.sae_evaluate(source, os.fspath(dataset), layer,
                                      patches_name=patches, batch_size=batch_size,
                                      threads=threads,
                                      model=None if model is None else os.fspath(model),
                                      ce_windows=ce_windows, progress=callback)
    finally:
        if bar is not None:
            bar.close()
    return json.loads(result)


class Feature(dict):
    """One latent as ``modelbin sae features --json`` prints it (a ``dict``:
    ``latent``, ``density``, ``band``, ``fired``, ``max``, ``mean``,
    ``histogram``, ``top``, ``quantiles`` and, given the model, ``effects``),
    which a notebook shows as the feature browser's view of the latent. For
    a dataset recorded from images, each input of ``top`` and of the
    intervals' ``samples`` is an image: its ``image`` holds the file's
    ``path``, the patch ``grid`` ``[rows, cols]``, the latent's activation
    on every patch (``acts``, row by row) and, when the view holds CLS, on
    the ``cls`` token; the notebook view draws them as heat maps over the
    images."""

    def __init__(self, fields: Dict[str, Any], name: str, examples: int, d_sae: int,
                 dataset: Optional[str] = None) -> None:
        super().__init__(fields)
        self._page = (name, examples, d_sae, dataset)

    def _repr_html_(self) -> str:
        name, examples, d_sae, dataset = self._page
        page = _native.sae_latent_page(name, examples, d_sae, json.dumps(self), dataset)
        # The page's script runs in a frame of its own.
        quoted = html_escape(page, quote=True)
        return (f'<iframe srcdoc="{quoted}" style="width:100%;height:36em;border:1px solid #ddd" '
                f'title="latent {self["latent"]}"></iframe>')


def features(sae: "SAE | str | os.PathLike[str]", dataset: "str | os.PathLike[str]", *,
             layer: int, patches: str = "image", top: int = 5, quantiles: int = 5,
             samples: int = 2, latent: Optional[int] = None, latents: int = 20,
             html: "Optional[str | os.PathLike[str]]" = None,
             model: "Optional[str | os.PathLike[str]]" = None, batch_size: Optional[int] = None,
             threads: Optional[int] = None, progress: Optional[bool] = None) -> "list[Feature]":
    """What each latent fires on, as ``modelbin sae features`` finds it: for
    ``latent`` only, or for the first ``latents`` in the browsing order
    (mid-density first), a :class:`Feature` each — its firing density and
    band, largest and mean activation, histogram, ``top`` strongest inputs
    and ``samples`` inputs from each of ``quantiles`` intervals of its
    range, each in its text with every token's activation when the dataset
    kept its token ids. Over a dataset recorded from images, the inputs
    shown are images: the strongest by their strongest patch (each image
    once per latent), with the latent's activation on every patch (see
    :class:`Feature`). ``model`` (the model the dataset was recorded from)
    adds the decoder row's effects: on the next token (TLLM; a language
    model's directory: ``W_dec[latent] @ W_U``, the tokens shown as its
    tokenizer decodes them) or the nearest word pieces (BERT). The list of what ``--json`` prints; ``html`` also
    writes the page ``--html`` writes, of every latent. ``dataset`` may be
    a union manifest (``union.json``): its members are read as one, each
    input shown from its own member's text or image (``img`` counts the
    union's images), so the union of a dataset's slices gives what the
    dataset gives."""
    source = sae._native if isinstance(sae, SAE) else os.fspath(sae)
    name = "an autoencoder" if isinstance(sae, SAE) else os.fspath(sae)
    callback, bar = _progress.bytes_callback(progress, "scanning")
    try:
        result = json.loads(_native.sae_features(
            source, os.fspath(dataset), layer, patches_name=patches, batch_size=batch_size,
            threads=threads, top=top, quantiles=quantiles, samples=samples, latent=latent,
            latents=None if html is not None else latents,
            html=None if html is None else os.fspath(html),
            model=None if model is None else os.fspath(model), progress=callback))
    finally:
        if bar is not None:
            bar.close()
    return [Feature(f, name, result["examples"], result["d_sae"], os.fspath(dataset))
            for f in result["latents"][:latents]]

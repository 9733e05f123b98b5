#!/usr/bin/env python3
"""Autoencoders in the layouts people download, written in their own
formats and read back by their own readers: the oracle of
crates/python/tests_heavy/test_sae_layouts.py.

Usage: sae_layouts_reference.py OUT_DIR

Each layout gets a folder under OUT_DIR with the autoencoder's files where
its publisher puts them, `inputs.npy` (rows to encode) and `expected.npz`
(`codes` and `reconstructions` of those rows as the reference computes
them), and `expected.json` (the layout, and the hook and model the
reference names):

- gemma_scope: `params.npz` in a Hugging Face cache
  (`hub/models--google--gemma-scope-2b-pt-res/snapshots/…/layer_3/width_16k/
  average_l0_7/`), read by SAELens 6.54's own `gemma_2_sae_huggingface_loader`
  offline (HF_HUB_OFFLINE, the cache as HF_HUB_CACHE), and computed by the
  JumpReLUSAE SAELens builds from it, as `SAE.from_pretrained` does;
- gemma_scope_2: `params.safetensors` and `config.json`, read by SAELens's
  `gemma_3_sae_huggingface_loader` offline (its header request,
  `get_safetensors_tensor_shapes`, answered from the same file's header
  read locally, the one network call the loader makes besides the download);
- llama_scope: `hyperparams.json` and `checkpoints/final.safetensors` in a
  cache, read by SAELens's `llama_scope_sae_huggingface_loader`, with
  `fold_activation_norm_scaling_factor(√d_model / average norm)` applied as
  `from_pretrained` applies the release's factor;
- sparsify: a folder `layers.3` written by eai-sparsify's own
  `SparseCoder.save_to_disk`, computed by its own `encode` and `decode`
  (its eager decoder: SPARSIFY_DISABLE_TRITON, the Triton one needing a
  GPU).

Weights are random (thresholds positive, some latents firing, some not).
"""

import json
import os
import pathlib
import sys

import numpy as np
import torch

OUT = pathlib.Path(sys.argv[1])
HUB = OUT / "hub"
os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["HF_HUB_CACHE"] = str(HUB)
# sparsify's own CPU decoder (its Triton kernel needs a GPU).
os.environ["SPARSIFY_DISABLE_TRITON"] = "1"

# After the environment is set: huggingface_hub reads it at import.
from safetensors.numpy import save_file  # noqa: E402
from sae_lens import SAE  # noqa: E402
from sae_lens.loading import pretrained_sae_loaders as loaders  # noqa: E402
from sae_lens.loading.pretrained_sae_loaders import handle_config_defaulting  # noqa: E402

ROWS = 24
REVISION = "0" * 40
rng = np.random.default_rng(7)


def cached(repo_id, folder):
    """The folder `folder` of a cached snapshot of `repo_id`."""
    root = HUB / ("models--" + repo_id.replace("/", "--"))
    (root / "refs").mkdir(parents=True, exist_ok=True)
    (root / "refs" / "main").write_text(REVISION)
    path = root / "snapshots" / REVISION / folder
    path.mkdir(parents=True, exist_ok=True)
    return path


def weights(d_in, d_sae):
    return {
        "W_enc": rng.normal(0, 0.5, (d_in, d_sae)).astype(np.float32),
        "W_dec": rng.normal(0, 0.3, (d_sae, d_in)).astype(np.float32),
        "b_enc": rng.normal(0, 0.2, d_sae).astype(np.float32),
        "b_dec": rng.normal(0, 0.2, d_in).astype(np.float32),
        "threshold": rng.uniform(0.2, 1.5, d_sae).astype(np.float32),
    }


def build(cfg_dict, state_dict):
    """The SAE SAELens's from_pretrained builds from a loader's output."""
    cfg_dict = handle_config_defaulting(cfg_dict)
    cfg = SAE.get_sae_config_class_for_architecture(cfg_dict["architecture"]).from_dict(cfg_dict)
    sae = SAE.get_sae_class_for_architecture(cfg.architecture())(cfg)
    sae.process_state_dict_for_loading(state_dict)
    sae.load_state_dict(state_dict)
    return sae


def finish(folder, inputs, codes, recons, hook, model):
    np.save(folder / "inputs.npy", inputs)
    np.savez(folder / "expected.npz", codes=codes, reconstructions=recons)
    layout = sys._getframe(1).f_code.co_name
    (folder / "expected.json").write_text(json.dumps(
        {"layout": layout, "hook_name": hook, "model_name": model}))


def saelens_outputs(sae, inputs):
    with torch.no_grad():
        x = torch.from_numpy(inputs)
        codes = sae.encode(x)
        return codes.numpy(), sae.decode(codes).numpy()


def gemma_scope(d_in=16, d_sae=64):
    repo, folder = "google/gemma-scope-2b-pt-res", "layer_3/width_16k/average_l0_7"
    path = cached(repo, folder)
    np.savez(path / "params.npz", **weights(d_in, d_sae))
    cfg, state, _ = loaders.gemma_2_sae_huggingface_loader(
        repo, folder, cfg_overrides={"d_in": d_in, "d_sae": d_sae})
    sae = build(cfg, state)
    inputs = rng.normal(0, 2.0, (ROWS, d_in)).astype(np.float32)
    finish(path, inputs, *saelens_outputs(sae, inputs), cfg["hook_name"], cfg["model_name"])


def local_shapes(repo_id, filename):
    """The tensor shapes of a cached file's header: what SAELens asks the
    Hub for with a range request."""
    path = HUB / ("models--" + repo_id.replace("/", "--")) / "snapshots" / REVISION / filename
    raw = path.read_bytes()
    header = json.loads(raw[8:8 + int.from_bytes(raw[:8], "little")])
    return {k: v["shape"] for k, v in header.items() if k != "__metadata__"}


def gemma_scope_2(d_in=16, d_sae=48):
    repo, folder = "google/gemma-scope-2-270m-pt", "resid_post/layer_5_width_16k_l0_small"
    path = cached(repo, folder)
    w = weights(d_in, d_sae)
    save_file({"w_enc": w["W_enc"], "w_dec": w["W_dec"], "b_enc": w["b_enc"],
               "b_dec": w["b_dec"], "threshold": w["threshold"]}, path / "params.safetensors")
    (path / "config.json").write_text(json.dumps({
        "architecture": "jump_relu", "model_name": "gemma-v3-270m-pt",
        "hf_hook_point_in": "model.layers.5.output", "hf_hook_point_out": "model.layers.5.output",
        "width": d_sae, "l0": 10, "affine_connection": False, "type": "sae"}))
    loaders.get_safetensors_tensor_shapes = local_shapes
    cfg, state, _ = loaders.gemma_3_sae_huggingface_loader(repo, folder)
    sae = build(cfg, state)
    inputs = rng.normal(0, 2.0, (ROWS, d_in)).astype(np.float32)
    finish(path, inputs, *saelens_outputs(sae, inputs), cfg["hook_name"], cfg["model_name"])


def llama_scope(d_in=16, d_sae=64):
    repo, folder = "fnlp/Llama3_1-8B-Base-LXR-8x", "Llama3_1-8B-Base-L2R-8x"
    path = cached(repo, folder)
    (path / "checkpoints").mkdir(exist_ok=True)
    average_norm = 11.5
    (path / "hyperparams.json").write_text(json.dumps({
        "d_model": d_in, "d_sae": d_sae, "hook_point_in": "blocks.2.hook_resid_post",
        "hook_point_out": "blocks.2.hook_resid_post", "jump_relu_threshold": 0.4,
        "dataset_average_activation_norm": {"in": average_norm, "out": average_norm},
        "top_k": 50, "act_fn": "jumprelu"}))
    save_file({
        "encoder.weight": rng.normal(0, 0.5, (d_sae, d_in)).astype(np.float32),
        "encoder.bias": rng.normal(0, 0.2, d_sae).astype(np.float32),
        "decoder.weight": rng.normal(0, 0.3, (d_in, d_sae)).astype(np.float32),
        "decoder.bias": rng.normal(0, 0.2, d_in).astype(np.float32),
    }, path / "checkpoints" / "final.safetensors")
    cfg, state, _ = loaders.llama_scope_sae_huggingface_loader(
        repo, folder, cfg_overrides={"dtype": "float32", "device": "cpu"})
    sae = build(cfg, state)
    sae.fold_activation_norm_scaling_factor(d_in ** 0.5 / average_norm)
    inputs = rng.normal(0, 3.0, (ROWS, d_in)).astype(np.float32)
    finish(path, inputs, *saelens_outputs(sae, inputs), cfg["hook_name"], cfg["model_name"])


def sparsify(d_in=16, d_sae=64, k=6):
    from sparsify import SparseCoder, SparseCoderConfig

    run = OUT / "sparsify-run"
    run.mkdir(parents=True, exist_ok=True)
    (run / "config.json").write_text(json.dumps({"model": "EleutherAI/pythia-70m", "ctx_len": 512}))
    torch.manual_seed(3)
    coder = SparseCoder(d_in, SparseCoderConfig(num_latents=d_sae, k=k))
    with torch.no_grad():
        coder.encoder.bias.normal_(0, 0.2)
        coder.b_dec.normal_(0, 0.2)
        coder.W_dec.normal_(0, 0.3)
    folder = run / "layers.3"
    coder.save_to_disk(folder)
    coder = SparseCoder.load_from_disk(folder)
    inputs = rng.normal(0, 2.0, (ROWS, d_in)).astype(np.float32)
    with torch.no_grad():
        out = coder.encode(torch.from_numpy(inputs))
        recons = coder.decode(out.top_acts, out.top_indices).numpy()
        codes = torch.zeros(ROWS, d_sae).scatter_(1, out.top_indices, out.top_acts).numpy()
    finish(folder, inputs, codes, recons, "blocks.3.hook_resid_post", "EleutherAI/pythia-70m")


def main():
    for make in (gemma_scope, gemma_scope_2, llama_scope, sparsify):
        make()
        print(make.__name__, file=sys.stderr)


if __name__ == "__main__":
    main()

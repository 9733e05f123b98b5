#!/usr/bin/env python3
"""Random decoder language models saved by transformers, with transformers'
own outputs on them: the oracle of crates/infer/tests/lm_transformers.rs.

Usage: lm_reference.py OUT_DIR

For each model of MODELS, OUT_DIR/NAME/ holds what `save_pretrained` wrote
(config.json, model.safetensors or shards with model.safetensors.index.json;
F32, F16 or BF16), sometimes rewritten as hub files are (GPT-2 names without
`transformer.` and with the `attn.bias` buffers; Llama's RoPE in the old
top-level `rope_theta` / `rope_scaling` layout), plus:

- expected.json: the token ids run (`windows`: WINDOWS windows of WINDOW
  tokens; `sequence`: one sequence; `prompt`), `generated` (greedy
  `model.generate`, do_sample=False, with the KV cache), the layers.
- expected.safetensors (F32): `logits` of `sequence`; for every layer L and
  site S (resid_pre, attn_out, mlp_out, resid_post), `S.L` over the windows
  as one batch, `[WINDOWS * WINDOW, hidden]`, taken with forward hooks on
  the block module (and its attention and MLP modules; Gemma's norms after
  them, as TransformerLens hooks what joins the residual stream); `spliced_logits`:
  the logits of `sequence` when a hook halves block 0's output.

transformers runs in f32 on every model (BF16/F16 files loaded with
dtype=torch.float32: the widening is exact, so only f32 arithmetic differs)
with eager attention. Weights are drawn larger than transformers' 0.02
initialisation so the greedy tokens have no near-ties.
"""

import json
import pathlib
import sys

import torch
import transformers as tf
from safetensors.torch import load_file, save_file

VOCAB = 300
POSITIONS = 64
WINDOW = 16
WINDOWS = 3
SEQUENCE = 24
PROMPT = 5
NEW_TOKENS = 20


def gpt2(**kw):
    base = dict(vocab_size=VOCAB, n_positions=POSITIONS, n_embd=32, n_layer=2, n_head=4,
                bos_token_id=1, eos_token_id=2)
    base.update(kw)
    return tf.GPT2LMHeadModel(tf.GPT2Config(**base))


def neox(**kw):
    base = dict(vocab_size=VOCAB, hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
                intermediate_size=96, max_position_embeddings=POSITIONS, rotary_pct=0.25,
                rotary_emb_base=10000, use_parallel_residual=True, bos_token_id=1,
                eos_token_id=2)
    base.update(kw)
    return tf.GPTNeoXForCausalLM(tf.GPTNeoXConfig(**base))


LLAMA3 = {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
          "high_freq_factor": 4.0, "original_max_position_embeddings": 16}


def llama(**kw):
    base = dict(vocab_size=VOCAB, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                num_key_value_heads=2, intermediate_size=48, max_position_embeddings=POSITIONS,
                bos_token_id=1, eos_token_id=2)
    base.update(kw)
    return tf.LlamaForCausalLM(tf.LlamaConfig(**base))


def qwen2(**kw):
    base = dict(vocab_size=VOCAB, hidden_size=32, num_hidden_layers=3, num_attention_heads=4,
                num_key_value_heads=2, intermediate_size=48, max_position_embeddings=POSITIONS,
                bos_token_id=1, eos_token_id=2)
    base.update(kw)
    return tf.Qwen2ForCausalLM(tf.Qwen2Config(**base))


def mistral(**kw):
    base = dict(vocab_size=VOCAB, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                num_key_value_heads=2, intermediate_size=48, max_position_embeddings=POSITIONS,
                bos_token_id=1, eos_token_id=2, sliding_window=4)
    base.update(kw)
    return tf.MistralForCausalLM(tf.MistralConfig(**base))


def qwen3(**kw):
    base = dict(vocab_size=VOCAB, hidden_size=32, num_hidden_layers=3, num_attention_heads=4,
                num_key_value_heads=2, head_dim=16, intermediate_size=48,
                max_position_embeddings=POSITIONS, bos_token_id=1, eos_token_id=2)
    base.update(kw)
    return tf.Qwen3ForCausalLM(tf.Qwen3Config(**base))


def gemma2(**kw):
    base = dict(vocab_size=VOCAB, hidden_size=32, num_hidden_layers=3, num_attention_heads=4,
                num_key_value_heads=2, head_dim=16, intermediate_size=48,
                max_position_embeddings=POSITIONS, query_pre_attn_scalar=24, sliding_window=4,
                attn_logit_softcapping=5.0, final_logit_softcapping=10.0, bos_token_id=1,
                eos_token_id=2, pad_token_id=0)
    base.update(kw)
    return tf.Gemma2ForCausalLM(tf.Gemma2Config(**base))


def gemma3(**kw):
    base = dict(vocab_size=VOCAB, hidden_size=32, num_hidden_layers=3, num_attention_heads=4,
                num_key_value_heads=1, head_dim=16, intermediate_size=48,
                max_position_embeddings=POSITIONS, query_pre_attn_scalar=16, sliding_window=6,
                layer_types=["sliding_attention", "full_attention", "sliding_attention"],
                rope_parameters={"full_attention": {"rope_type": "linear", "factor": 2.0,
                                                    "rope_theta": 1000000.0},
                                 "sliding_attention": {"rope_type": "default",
                                                       "rope_theta": 10000.0}},
                bos_token_id=1, eos_token_id=2, pad_token_id=0)
    base.update(kw)
    return tf.Gemma3ForCausalLM(tf.Gemma3TextConfig(**base))


# name -> (builder, dtype of the files, max_shard_size or None, rewrite)
MODELS = {
    "gpt2_f32_tied": (lambda: gpt2(), torch.float32, None, None),
    "gpt2_hub_names_f16": (lambda: gpt2(n_layer=3), torch.float16, None, "gpt2_hub"),
    "gpt2_bf16_untied": (lambda: gpt2(tie_word_embeddings=False, n_inner=48,
                                      activation_function="gelu",
                                      scale_attn_by_inverse_layer_idx=True),
                         torch.bfloat16, None, None),
    "neox_parallel_f32": (lambda: neox(), torch.float32, None, None),
    "neox_sequential_f16_sharded": (lambda: neox(use_parallel_residual=False, rotary_pct=1.0,
                                                 num_hidden_layers=3),
                                    torch.float16, "40KB", None),
    "neox_tied_bf16": (lambda: neox(tie_word_embeddings=True, rotary_pct=0.5),
                       torch.bfloat16, None, None),
    "llama_gqa_llama3_f32": (lambda: llama(rope_theta=500000.0, rope_scaling=LLAMA3),
                             torch.float32, None, None),
    "llama_old_rope_layout_f32": (lambda: llama(rope_theta=500000.0, rope_scaling=LLAMA3),
                                  torch.float32, None, "llama_old_rope"),
    "llama_bias_headdim_tied_bf16": (lambda: llama(attention_bias=True, mlp_bias=True,
                                                   tie_word_embeddings=True, head_dim=16,
                                                   num_key_value_heads=4,
                                                   rope_scaling={"rope_type": "linear",
                                                                 "factor": 2.0}),
                                     torch.bfloat16, None, None),
    "llama_mha_f16_sharded": (lambda: llama(num_key_value_heads=4, num_hidden_layers=3),
                              torch.float16, "30KB", None),
    "qwen2_tied_f32_sharded": (lambda: qwen2(tie_word_embeddings=True), torch.float32, "30KB",
                               None),
    "qwen2_untied_bf16": (lambda: qwen2(tie_word_embeddings=False, num_key_value_heads=1),
                          torch.bfloat16, None, None),
    "qwen2_sliding_f32": (lambda: qwen2(use_sliding_window=True, sliding_window=4,
                                        max_window_layers=1), torch.float32, None, None),
    "mistral_sliding_f32": (lambda: mistral(), torch.float32, None, None),
    "mistral_full_bf16_sharded": (lambda: mistral(sliding_window=None, head_dim=16),
                                  torch.bfloat16, "30KB", None),
    "qwen3_f32": (lambda: qwen3(), torch.float32, None, None),
    "qwen3_sliding_tied_f16": (lambda: qwen3(use_sliding_window=True, sliding_window=5,
                                             max_window_layers=1, tie_word_embeddings=True,
                                             attention_bias=True),
                               torch.float16, None, None),
    "gemma2_capped_f32": (lambda: gemma2(), torch.float32, None, None),
    "gemma2_defaults_bf16_sharded": (lambda: gemma2(attn_logit_softcapping=50.0,
                                                    final_logit_softcapping=30.0,
                                                    num_hidden_layers=4),
                                     torch.bfloat16, "30KB", None),
    "gemma3_f32": (lambda: gemma3(), torch.float32, None, None),
    "gemma3_hub_layout_bf16": (lambda: gemma3(num_hidden_layers=4, num_key_value_heads=2,
                                              layer_types=None, sliding_window_pattern=2,
                                              final_logit_softcapping=10.0),
                               torch.bfloat16, None, "gemma3_hub"),
}


def scale_weights(model):
    """Weights drawn from N(0, 0.2) (norm weights 1 ± 0.1, biases N(0, 0.1))
    so that logits spread and greedy picks have no near-ties."""
    g = torch.Generator().manual_seed(1234)
    # Gemma stores its norms' weights as offsets from one.
    one = 0 if model.config.model_type.startswith("gemma") else 1
    with torch.no_grad():
        for name, p in model.named_parameters():
            if p.dim() == 1 and ("norm" in name or "ln_" in name or "ln_f" in name):
                p.copy_(one + 0.1 * torch.randn(p.shape, generator=g))
            elif p.dim() == 1:
                p.copy_(0.1 * torch.randn(p.shape, generator=g))
            else:
                p.copy_(0.2 * torch.randn(p.shape, generator=g))


def rewrite(directory, how):
    if how == "gpt2_hub":
        # Hub GPT-2 files: names without "transformer.", with the causal-mask buffers.
        path = directory / "model.safetensors"
        tensors = load_file(path)
        renamed = {k.removeprefix("transformer."): v for k, v in tensors.items()}
        layers = json.loads((directory / "config.json").read_text())["n_layer"]
        for i in range(layers):
            renamed[f"h.{i}.attn.bias"] = torch.tril(torch.ones(1, 1, POSITIONS, POSITIONS)
                                                     ).to(torch.float16)
            renamed[f"h.{i}.attn.masked_bias"] = torch.tensor(-1e4, dtype=torch.float16)
        save_file(renamed, path, metadata={"format": "pt"})
    elif how == "llama_old_rope":
        # Hub Llama 3 files: top-level rope_theta and rope_scaling.
        path = directory / "config.json"
        config = json.loads(path.read_text())
        params = config.pop("rope_parameters")
        config["rope_theta"] = params.pop("rope_theta")
        config["rope_scaling"] = params
        path.write_text(json.dumps(config, indent=2))
    elif how == "gemma3_hub":
        # Hub Gemma 3 files: the two RoPE bases at the top level, the
        # layers' pattern as a number.
        path = directory / "config.json"
        config = json.loads(path.read_text())
        params = config.pop("rope_parameters")
        config["rope_theta"] = params["full_attention"]["rope_theta"]
        config["rope_local_base_freq"] = params["sliding_attention"]["rope_theta"]
        config["rope_scaling"] = {"rope_type": "linear", "factor": 2.0}
        config["sliding_window_pattern"] = 2
        del config["layer_types"]
        path.write_text(json.dumps(config, indent=2))


def blocks_of(model):
    inner = getattr(model, "transformer", None) or getattr(model, "gpt_neox", None) or model.model
    blocks = getattr(inner, "h", None) or inner.layers
    parts = []
    for block in blocks:
        attn = getattr(block, "attn", None) or getattr(block, "attention", None) or block.self_attn
        mlp = block.mlp
        if hasattr(block, "post_feedforward_layernorm"):
            # Gemma: attn_out and mlp_out are what joins the residual, after
            # their norms, as TransformerLens hooks them.
            attn, mlp = block.post_attention_layernorm, block.post_feedforward_layernorm
        parts.append((block, attn, mlp))
    return parts


def first(output):
    return output[0] if isinstance(output, tuple) else output


def record(model, ids):
    """Every site of every layer over the batch `ids`."""
    found, handles = {}, []
    for layer, (block, attn, mlp) in enumerate(blocks_of(model)):
        def pre(module, args, kwargs, layer=layer):
            x = args[0] if args else kwargs["hidden_states"]
            found[f"resid_pre.{layer}"] = x.detach().clone()
        handles.append(block.register_forward_pre_hook(pre, with_kwargs=True))
        for site, module in (("resid_post", block), ("attn_out", attn), ("mlp_out", mlp)):
            def hook(module, args, output, site=site, layer=layer):
                found[f"{site}.{layer}"] = first(output).detach().clone()
            handles.append(module.register_forward_hook(hook))
    with torch.inference_mode():
        model(torch.tensor(ids))
    for h in handles:
        h.remove()
    hidden = model.config.hidden_size
    return {k: v.reshape(-1, hidden).float().contiguous() for k, v in found.items()}


def main():
    out = pathlib.Path(sys.argv[1])
    out.mkdir(parents=True, exist_ok=True)
    for index, (name, (build, dtype, shard, how)) in enumerate(MODELS.items()):
        torch.manual_seed(index)
        model = build().eval()
        scale_weights(model)
        directory = out / name
        kwargs = {"max_shard_size": shard} if shard else {}
        model.to(dtype).save_pretrained(directory, **kwargs)
        if how:
            rewrite(directory, how)
        model = tf.AutoModelForCausalLM.from_pretrained(
            directory, dtype=torch.float32, attn_implementation="eager").eval()
        g = torch.Generator().manual_seed(100 + index)
        windows = torch.randint(0, VOCAB, (WINDOWS, WINDOW), generator=g).tolist()
        sequence = torch.randint(0, VOCAB, (SEQUENCE,), generator=g).tolist()
        prompt = torch.randint(0, VOCAB, (PROMPT,), generator=g).tolist()
        tensors = record(model, windows)
        with torch.inference_mode():
            tensors["logits"] = model(torch.tensor([sequence])).logits[0].float().contiguous()
            block0 = blocks_of(model)[0][0]
            handle = block0.register_forward_hook(lambda m, a, o: (first(o) * 0.5,) + tuple(
                o[1:]) if isinstance(o, tuple) else o * 0.5)
            tensors["spliced_logits"] = model(torch.tensor([sequence])).logits[0].float(
            ).contiguous()
            handle.remove()
            model.generation_config.eos_token_id = None
            # An explicit mask: generate would otherwise mask the prompt's
            # tokens equal to pad_token_id.
            ids = torch.tensor([prompt])
            generated = model.generate(ids, attention_mask=torch.ones_like(ids),
                                       max_new_tokens=NEW_TOKENS, do_sample=False,
                                       pad_token_id=0)[0, PROMPT:].tolist()
        save_file(tensors, directory / "expected.safetensors")
        (directory / "expected.json").write_text(json.dumps({
            "windows": windows, "sequence": sequence, "prompt": prompt, "generated": generated,
            "layers": model.config.num_hidden_layers, "hidden": model.config.hidden_size,
            "dtype": str(dtype).removeprefix("torch."), "sharded": bool(shard),
        }))
        print(name, file=sys.stderr)


if __name__ == "__main__":
    main()

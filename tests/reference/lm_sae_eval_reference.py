#!/usr/bin/env python3
"""SAELens's reconstruction evals (`sae_lens.evals.get_recons_loss` with
its default `exclude_special_tokens=True`) on random decoder language
models run by transformers: the oracle of crates/infer/tests/lm_sae_eval.rs.

Usage: lm_sae_eval_reference.py OUT_DIR

For each model of MODELS, OUT_DIR/NAME/ holds what `save_pretrained` wrote
(config.json, model.safetensors) with a byte-level BPE tokenizer whose
BOS and EOS is `<|endoftext|>` (id 0; config.json names other ids, so the
special tokens must come from the tokenizer, as SAELens takes them), and
for each case (a site of a layer) OUT_DIR/NAME/CASE/ holds a random
autoencoder saved by SAELens (cfg.json, sae_weights.safetensors): standard
(ReLU) for GPT-2 and Llama, JumpReLU on raw inputs as Gemma Scope's for
Gemma 2 and Gemma 3 (whose attn_out and mlp_out are hooked after their
norms). OUT_DIR/NAME/expected.json holds the windows run
(`windows`: WINDOWS windows of WINDOW ids, each starting with BOS and with
BOS as a separator inside, as SAELens's concat_and_batch_sequences cuts
them), the special ids (`sae_lens.util.get_special_token_ids` of the
tokenizer) and, per case, SAELens's numbers computed as get_recons_loss
computes them, with transformers forward hooks in place of
TransformerLens's: the reconstruction replaces the rows at the site at
every position that is not a special token, zero ablation zeroes every
position, per-token losses and KLs at special positions are dropped, and
the rest averaged. Each case also holds `steered`: the logits of the
first window with STEER's `alpha · W_dec[latent]` added at the site at
every position by a forward hook, and `top_raised`: for LATENT, the token
whose unembedding row has the largest dot product with its decoder row,
and `big_argmax`, the likeliest next token at the first window's last
position when BIG_ALPHA steers.
Each autoencoder's cfg names its hook in `metadata.hook_name`, as SAELens
6 keeps it.
"""

import json
import pathlib
import sys

import torch
import transformers as tf
from sae_lens import JumpReLUSAE, JumpReLUSAEConfig, StandardSAE, StandardSAEConfig
from sae_lens.util import get_special_token_ids
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

VOCAB = 300
WINDOW = 16
WINDOWS = 4
CASES = [("resid_post", 1), ("mlp_out", 0), ("attn_out", 1)]
STEER = {3: 4.0, 10: -2.0}
LATENT = 5
BIG_ALPHA = 60.0


def tokenizer_files(directory: pathlib.Path) -> None:
    corpus = [f"line {i}: the quick brown fox jumps over {i * 7} lazy dogs\n" for i in range(200)]
    bpe = Tokenizer(models.BPE())
    bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    bpe.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=VOCAB, special_tokens=["<|endoftext|>"],
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    bpe.train_from_iterator(corpus, trainer)
    fast = tf.PreTrainedTokenizerFast(tokenizer_object=bpe, bos_token="<|endoftext|>",
                                      eos_token="<|endoftext|>")
    fast.save_pretrained(directory)


def gpt2():
    return tf.GPT2LMHeadModel(tf.GPT2Config(vocab_size=VOCAB, n_positions=64, n_embd=32,
                                            n_layer=2, n_head=4, bos_token_id=1,
                                            eos_token_id=2))


def llama():
    return tf.LlamaForCausalLM(tf.LlamaConfig(
        vocab_size=VOCAB, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
        num_key_value_heads=2, intermediate_size=48, max_position_embeddings=64,
        bos_token_id=1, eos_token_id=2))


def gemma2():
    return tf.Gemma2ForCausalLM(tf.Gemma2Config(
        vocab_size=VOCAB, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
        num_key_value_heads=2, head_dim=8, intermediate_size=48, max_position_embeddings=64,
        query_pre_attn_scalar=8, sliding_window=4, bos_token_id=1, eos_token_id=2,
        pad_token_id=3))


def gemma3():
    return tf.Gemma3ForCausalLM(tf.Gemma3TextConfig(
        vocab_size=VOCAB, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
        num_key_value_heads=1, head_dim=8, intermediate_size=48, max_position_embeddings=64,
        query_pre_attn_scalar=8, sliding_window=4,
        layer_types=["sliding_attention", "full_attention"], bos_token_id=1, eos_token_id=2,
        pad_token_id=3))


MODELS = {"gpt2": gpt2, "llama": llama, "gemma2": gemma2, "gemma3": gemma3}


def blocks(model):
    return model.transformer.h if hasattr(model, "transformer") else model.model.layers


def module(model, site, layer):
    block = blocks(model)[layer]
    if site == "resid_post":
        return block
    if hasattr(block, "post_feedforward_layernorm"):
        # Gemma: what joins the residual stream, after the norms, as
        # TransformerLens hooks attn_out and mlp_out.
        norm = "post_feedforward_layernorm" if site == "mlp_out" else "post_attention_layernorm"
        return getattr(block, norm)
    if site == "mlp_out":
        return block.mlp
    return block.attn if hasattr(block, "attn") else block.self_attn


def autoencoder(name, site, layer):
    """A random autoencoder for `site` of `layer`: Gemma's as Gemma Scope's
    (JumpReLU on raw inputs, b_dec not subtracted), the others standard."""
    torch.manual_seed(layer + 10 * len(site))
    if name.startswith("gemma"):
        sae = JumpReLUSAE(JumpReLUSAEConfig(d_in=32, d_sae=64, dtype="float32", device="cpu",
                                            apply_b_dec_to_input=False))
    else:
        sae = StandardSAE(StandardSAEConfig(d_in=32, d_sae=64, dtype="float32", device="cpu",
                                            apply_b_dec_to_input=True))
    with torch.no_grad():
        sae.W_enc.normal_(0, 0.3)
        sae.W_dec.copy_(sae.W_enc.T * 0.5)
        sae.b_enc.normal_(0, 0.1)
        sae.b_dec.normal_(0, 0.1)
        if hasattr(sae, "threshold"):
            sae.threshold.uniform_(0.05, 0.4)
    return sae


def run(model, tokens, site, layer, replace, dtype=torch.float64):
    """Logits of `tokens` with `replace(rows)` applied at the site, as
    `dtype`."""
    def hook(mod, args, output):
        if isinstance(output, tuple):
            return (replace(output[0]),) + tuple(output[1:])
        return replace(output)

    handle = module(model, site, layer).register_forward_hook(hook)
    try:
        with torch.no_grad():
            return model(tokens).logits.to(dtype)
    finally:
        handle.remove()


def per_token_loss(logits, tokens):
    log_probs = torch.log_softmax(logits, dim=-1)
    return -log_probs[:, :-1].gather(-1, tokens[:, 1:, None])[..., 0]


def kl(clean, new):
    # As sae_lens.evals._kl: KL(clean || new), summed over the vocabulary.
    return torch.nn.functional.kl_div(torch.log_softmax(new, -1), torch.softmax(clean, -1),
                                      reduction="none").sum(-1)


def recons_metrics(model, tokens, special, site, layer, sae, dtype=torch.float64):
    """What get_recons_loss reports for `sae` spliced in at `site` of
    `layer` over `tokens` `[windows, window]`, positions holding an id of
    `special` left out, under modelbin's names; the losses computed from
    logits in `dtype` (SAELens: float32)."""
    mask = ~torch.isin(tokens, torch.tensor(special))
    clean = run(model, tokens, site, layer, lambda x: x, dtype)

    def splice(x):
        new = sae.decode(sae.encode(x)).to(x.dtype)
        return torch.where(mask[..., None], new, x)

    spliced = run(model, tokens, site, layer, splice, dtype)
    zero = run(model, tokens, site, layer, torch.zeros_like, dtype)
    ce_mask = mask[:, :-1]
    ce = {k: per_token_loss(v, tokens)[ce_mask].mean().item()
          for k, v in [("clean", clean), ("spliced", spliced), ("zero_ablated", zero)]}
    kl_sae = kl(clean, spliced)[mask].mean().item()
    kl_zero = kl(clean, zero)[mask].mean().item()
    return {
        **ce,
        "recovered": (ce["zero_ablated"] - ce["spliced"]) / (ce["zero_ablated"] - ce["clean"]),
        "tokens": int(ce_mask.sum()), "kl_positions": int(mask.sum()),
        "kl_spliced": kl_sae, "kl_zero_ablated": kl_zero,
        "kl_recovered": (kl_zero - kl_sae) / kl_zero,
    }


def main(out: pathlib.Path) -> None:
    for name, make in MODELS.items():
        torch.manual_seed(0)
        model = make()
        with torch.no_grad():
            for p in model.parameters():
                if p.dim() > 1:
                    p.normal_(0, 0.2)
        model.eval()
        directory = out / name
        model.save_pretrained(directory)
        tokenizer_files(directory)
        special = sorted(get_special_token_ids(tf.AutoTokenizer.from_pretrained(directory)))
        bos = special[0]
        generator = torch.Generator().manual_seed(1)
        tokens = torch.randint(1, VOCAB, (WINDOWS, WINDOW), generator=generator)
        tokens[:, 0] = bos
        tokens[0, 7] = bos
        tokens[2, 11] = bos
        expected = {"windows": tokens.tolist(), "special": special, "cases": {}}
        for site, layer in CASES:
            sae = autoencoder(name, site, layer)
            case = f"{site}.{layer}"
            sae.cfg.metadata.hook_name = f"blocks.{layer}.hook_{site}"
            sae.save_model(directory / case)

            expected["cases"][case] = {"site": site, "layer": layer,
                                       **recons_metrics(model, tokens, special, site, layer, sae)}
            w_dec = sae.W_dec.detach().double()

            def steer(alphas):
                vector = sum(alpha * w_dec[latent] for latent, alpha in alphas.items())
                return lambda x: x + vector.to(x.dtype)

            first = tokens[:1]
            unembedding = model.get_output_embeddings().weight.detach().double()
            expected["cases"][case].update({
                "steer": [[latent, alpha] for latent, alpha in STEER.items()],
                "steered": run(model, first, site, layer, steer(STEER))[0].tolist(),
                "latent": LATENT, "big_alpha": BIG_ALPHA,
                "top_raised": int((unembedding @ w_dec[LATENT]).argmax()),
                "big_argmax": int(run(model, first, site, layer,
                                      steer({LATENT: BIG_ALPHA}))[0, -1].argmax()),
            })
        (directory / "expected.json").write_text(json.dumps(expected, indent=1))


if __name__ == "__main__":
    main(pathlib.Path(sys.argv[1]))

"""modelbin.vision.VisionModel gives the hidden states transformers gives
(`output_hidden_states=True`) for random-initialised DINOv2 (with and
without registers, position embeddings interpolated to other image sizes),
CLIP and SigLIP vision towers and full CLIP / SigLIP models, in F32, F16
and BF16."""

import numpy as np
import pytest
import torch
import transformers as tf

from modelbin.vision import VisionModel

# max |ours - theirs| <= RELATIVE * max |theirs|, for every block.
RELATIVE = 1e-4


def _randomize(model, seed):
    """Every parameter random (transformers' own initialisation leaves
    biases at 0 and LayerNorm and LayerScale weights at 1, which would hide
    a misplaced one)."""
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            noise = torch.randn(p.shape, generator=generator) * 0.1
            ones = name.endswith(("norm1.weight", "norm2.weight", "layrnorm.weight",
                                  "layernorm.weight", "lambda1"))
            p.copy_(noise + (1.0 if ones else 0.0))
    return model.eval()


def _dinov2(**kw):
    return tf.Dinov2Model(tf.Dinov2Config(**kw))


def _dinov2_registers(**kw):
    return tf.Dinov2WithRegistersModel(tf.Dinov2WithRegistersConfig(**kw))


def _clip_vision(**kw):
    return tf.CLIPVisionModel(tf.CLIPVisionConfig(**kw))


def _clip(**kw):
    text = dict(hidden_size=32, intermediate_size=64, num_hidden_layers=1,
                num_attention_heads=2, vocab_size=100, bos_token_id=1, eos_token_id=2)
    return tf.CLIPModel(tf.CLIPConfig(vision_config=kw, text_config=text, projection_dim=16))


def _siglip_vision(**kw):
    return tf.SiglipVisionModel(tf.SiglipVisionConfig(**kw))


def _siglip(**kw):
    text = dict(hidden_size=32, intermediate_size=64, num_hidden_layers=1,
                num_attention_heads=2, vocab_size=100, bos_token_id=1, eos_token_id=2)
    return tf.SiglipModel(tf.SiglipConfig(vision_config=kw, text_config=text))


def _vision_tower(model):
    """The module whose output_hidden_states we compare."""
    return model.vision_model if isinstance(model, (tf.CLIPModel, tf.SiglipModel)) else model


# (name, builder, config, dtype saved, input sizes (height, width)).
CASES = [
    ("dinov2", _dinov2,
     dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=2, patch_size=8,
          image_size=32), torch.float32, [(32, 32)]),
    # Position embeddings made for 7x7 patches, interpolated to 16x16, 4x4
    # and 3x5 grids.
    ("dinov2-interpolated", _dinov2,
     dict(hidden_size=48, num_hidden_layers=3, num_attention_heads=3, patch_size=14,
          image_size=98, mlp_ratio=2), torch.float32, [(224, 224), (56, 56), (42, 70)]),
    ("dinov2-registers", _dinov2_registers,
     dict(hidden_size=64, num_hidden_layers=2, num_attention_heads=4, patch_size=16,
          image_size=64, num_register_tokens=4), torch.float32, [(64, 64), (48, 80), (128, 96)]),
    ("dinov2-f16", _dinov2,
     dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=4, patch_size=8,
          image_size=40, qkv_bias=False), torch.float16, [(40, 40), (56, 32)]),
    ("clip-vision", _clip_vision,
     dict(hidden_size=64, intermediate_size=128, num_hidden_layers=3, num_attention_heads=4,
          patch_size=16, image_size=64), torch.float32, [(64, 64)]),
    ("clip", _clip,
     dict(hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=2,
          patch_size=8, image_size=32), torch.float32, [(32, 32)]),
    ("clip-bf16", _clip_vision,
     dict(hidden_size=48, intermediate_size=96, num_hidden_layers=2, num_attention_heads=2,
          patch_size=14, image_size=28), torch.bfloat16, [(28, 28)]),
    ("siglip-vision", _siglip_vision,
     dict(hidden_size=96, intermediate_size=192, num_hidden_layers=4, num_attention_heads=4,
          patch_size=14, image_size=56), torch.float32, [(56, 56)]),
    ("siglip", _siglip,
     dict(hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=2,
          patch_size=16, image_size=48), torch.float32, [(48, 48)]),
]

FAMILY = {"dinov2": "dinov2", "clip": "clip", "siglip": "siglip"}


@pytest.mark.parametrize("name, build, config, dtype, sizes", CASES, ids=[c[0] for c in CASES])
def test_hidden_states_equal_transformers(tmp_path, name, build, config, dtype, sizes):
    torch.manual_seed(0)
    model = _randomize(build(**config), seed=len(name))
    # Saved in `dtype`; the reference runs on the same weights widened.
    model.to(dtype).save_pretrained(tmp_path, safe_serialization=True)
    model.to(torch.float32)
    tower = _vision_tower(model)
    ours = VisionModel(tmp_path)
    family = name.split("-")[0]
    assert ours.family == FAMILY[family]
    assert ours.blocks == config["num_hidden_layers"]
    assert ours.width == config["hidden_size"]
    assert ours.patch_size == config["patch_size"]
    assert ours.has_cls == (family != "siglip")
    assert ours.registers == config.get("num_register_tokens", 0)
    assert ours.image_size == (config["image_size"],) * 2
    blocks = ours.blocks
    # Every block, asked out of order and from the end.
    layers = [-1] + list(range(blocks - 1))
    worst = 0.0
    for height, width in sizes:
        pixels = torch.randn(2, 3, height, width, generator=torch.Generator().manual_seed(1))
        with torch.no_grad():
            theirs = tower(pixel_values=pixels, output_hidden_states=True).hidden_states
        states = ours.hidden_states(pixels.numpy(), layers)
        assert len(states) == len(layers)
        for layer, state in zip(layers, states):
            expected = theirs[layer % blocks + 1].numpy()
            assert state.shape == expected.shape and state.dtype == np.float32
            error = np.abs(state - expected).max() / np.abs(expected).max()
            assert error <= RELATIVE, f"{height}x{width} block {layer % blocks}: {error:.2e}"
            worst = max(worst, error)
    print(f"\n{name}: worst relative error {worst:.2e}")


@pytest.mark.parametrize("name, build, config", [
    ("dinov2", _dinov2, dict(hidden_size=64, num_hidden_layers=3, num_attention_heads=4,
                             patch_size=14, image_size=56)),
    ("clip", _clip_vision, dict(hidden_size=64, intermediate_size=256, num_hidden_layers=3,
                                num_attention_heads=4, patch_size=16, image_size=64)),
], ids=["dinov2", "clip"])
def test_int8_hidden_states_stay_close(tmp_path, name, build, config):
    torch.manual_seed(0)
    model = _randomize(build(**config), seed=5)
    model.save_pretrained(tmp_path, safe_serialization=True)
    ours = VisionModel(tmp_path, int8=True)
    assert ours.int8 and not VisionModel(tmp_path).int8
    size = config["image_size"]
    pixels = torch.randn(2, 3, size, size, generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        theirs = model(pixel_values=pixels, output_hidden_states=True).hidden_states
    blocks = config["num_hidden_layers"]
    worst = 0.0
    for block, state in zip(range(blocks), ours.hidden_states(pixels.numpy(), range(blocks))):
        expected = theirs[block + 1].numpy()
        worst = max(worst, np.abs(state - expected).max() / np.abs(expected).max())
    # Weights and inputs quantized to 8 bits: a few percent at most.
    assert worst <= 3e-2, worst
    print(f"\n{name} int8: worst relative error {worst:.2e}")


def test_refusals_and_pickling(tmp_path):
    import pickle

    model = _randomize(_clip_vision(hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                                    num_attention_heads=2, patch_size=8, image_size=32), 3)
    model.save_pretrained(tmp_path, safe_serialization=True)
    ours = VisionModel(tmp_path)
    pixels = np.zeros((1, 3, 32, 32), np.float32)
    with pytest.raises(ValueError, match="layer 2"):
        ours.hidden_states(pixels, [2])
    with pytest.raises(ValueError, match="40×40"):
        ours.hidden_states(np.zeros((1, 3, 40, 40), np.float32), [0])
    with pytest.raises(ValueError, match="channels"):
        ours.hidden_states(np.zeros((1, 1, 32, 32), np.float32), [0])
    for int8 in (False, True):
        model = VisionModel(tmp_path, int8=int8)
        again = pickle.loads(pickle.dumps(model))
        assert again.int8 == int8
        np.testing.assert_array_equal(again.hidden_states(pixels, [-1])[0],
                                      model.hidden_states(pixels, [-1])[0])

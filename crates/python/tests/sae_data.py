"""Small SAEV datasets for the autoencoder tests."""

import numpy as np

import modelbin


def sine_dataset(root, n_imgs=64, d=16):
    """1 CLS + 4 patches of width d at layers -2 and -1, values from a sine
    (as the command line's SAE tests make)."""
    metadata = {"vit_family": "test", "vit_ckpt": "sine", "layers": [-2, -1],
                "n_patches_per_img": 4, "cls_token": True, "d_vit": d, "seed": 0,
                "n_imgs": n_imgs, "max_patches_per_shard": 200, "data": "sine values"}
    per_img = 2 * 5 * d
    values = np.sin(np.arange(n_imgs * per_img, dtype=np.float64) * 0.37).astype(np.float32)
    with modelbin.saev.Writer(root, metadata) as writer:
        writer.write(values.reshape(n_imgs, 2, 5, d))
    (path,) = root.iterdir()
    return path

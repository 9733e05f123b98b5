#!/usr/bin/env python3
"""SAEV protocol v1 written from docs/formats/saev.md with the standard library only
(struct, array, json, hashlib), as a test oracle for modelbin's reader and
writer.

    saev_reference.py hash METADATA.json          -> the dataset hash
    saev_reference.py write ROOT METADATA.json    -> writes ROOT/<HASH>/, prints its path
    saev_reference.py read DIR IMG LAYER TOKEN    -> the vector as JSON

`write` fills value (img, layer_idx, token, dim) with
img * 1000 + layer_idx * 100 + token + dim / 1024, and writes every shard full
size (zero tail), plus no extra shard.
"""
import array
import hashlib
import json
import os
import sys


def digest(metadata):
    return hashlib.sha256(json.dumps(metadata, sort_keys=True).encode("utf8")).hexdigest()


def geometry(m):
    L = len(m["layers"])
    T = m["n_patches_per_img"] + (1 if m["cls_token"] else 0)
    S = m["max_patches_per_shard"] // (L * T)
    return L, T, m["d_vit"], S


def value(img, layer_idx, token, dim):
    return img * 1000 + layer_idx * 100 + token + dim / 1024


def write(root, metadata):
    L, T, D, S = geometry(metadata)
    path = os.path.join(root, digest(metadata))
    os.makedirs(path)
    with open(os.path.join(path, "metadata.json"), "w") as f:
        json.dump(metadata, f, indent=4)
    n = metadata["n_imgs"]
    for shard in range((n + S - 1) // S):
        values = array.array("f")
        for img in range(shard * S, shard * S + S):
            for l in range(L):
                for t in range(T):
                    for d in range(D):
                        values.append(value(img, l, t, d) if img < n else 0.0)
        if sys.byteorder != "little":
            values.byteswap()
        with open(os.path.join(path, "acts%06d.bin" % shard), "wb") as f:
            values.tofile(f)
    return path


def read(path, img, layer, token):
    with open(os.path.join(path, "metadata.json")) as f:
        m = json.load(f)
    L, T, D, S = geometry(m)
    layer_idx = m["layers"].index(layer)
    shard, in_shard = divmod(img, S)
    offset = ((in_shard * L + layer_idx) * T + token) * D * 4
    with open(os.path.join(path, "acts%06d.bin" % shard), "rb") as f:
        f.seek(offset)
        values = array.array("f")
        values.frombytes(f.read(D * 4))
    if sys.byteorder != "little":
        values.byteswap()
    return list(values)


def main():
    command = sys.argv[1]
    if command == "hash":
        with open(sys.argv[2]) as f:
            print(digest(json.load(f)))
    elif command == "write":
        with open(sys.argv[3]) as f:
            print(write(sys.argv[2], json.load(f)))
    elif command == "read":
        print(json.dumps(read(sys.argv[2], *map(int, sys.argv[3:6]))))


if __name__ == "__main__":
    main()

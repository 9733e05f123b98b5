#!/usr/bin/env python3
"""Random-row gathering from a SAEV dataset with numpy memmap. Prints
vectors/s and GB/s as JSON.

    saev_numpy_gather.py DIR [N_VECTORS] [BATCH]

BATCH > 1 gathers BATCH random rows per numpy fancy-indexing call (numpy's
best case). BATCH = 1 reads one row per Python-level index, the way a
map-style dataset (`__getitem__` per example, as the Python reference's
loader does) reads shuffled examples.
"""
import json
import os
import sys
import time

import numpy as np

path = sys.argv[1]
n_vectors = int(sys.argv[2]) if len(sys.argv) > 2 else 200_000
batch = int(sys.argv[3]) if len(sys.argv) > 3 else 4096
per_row = batch == 1
with open(os.path.join(path, "metadata.json")) as f:
    m = json.load(f)
L = len(m["layers"])
T = m["n_patches_per_img"] + (1 if m["cls_token"] else 0)
D = m["d_vit"]
S = m["max_patches_per_shard"] // (L * T)
n_shards = (m["n_imgs"] + S - 1) // S
shards = [
    np.memmap(os.path.join(path, "acts%06d.bin" % i), dtype="float32", mode="r", shape=(S, L, T, D))
    for i in range(n_shards)
]
total = m["n_imgs"] * L * T
rng = np.random.default_rng(0)
start = time.perf_counter()
done = 0
checksum = 0.0
while done < n_vectors:
    idx = rng.integers(0, total, size=4096 if per_row else batch)
    img, rest = np.divmod(idx, L * T)
    layer, token = np.divmod(rest, T)
    shard, in_shard = np.divmod(img, S)
    out = np.empty((len(idx), D), dtype=np.float32)
    if per_row:
        for j in range(len(idx)):
            out[j] = shards[shard[j]][in_shard[j], layer[j], token[j]]
    else:
        for s in np.unique(shard):
            sel = shard == s
            out[sel] = shards[s][in_shard[sel], layer[sel], token[sel]]
    checksum += float(out[0, 0])
    done += len(idx)
seconds = time.perf_counter() - start
print(json.dumps({"vectors": done, "seconds": seconds, "vectors_per_second": done / seconds,
                  "gb_per_second": done * D * 4 / seconds / 1e9, "checksum": checksum}))

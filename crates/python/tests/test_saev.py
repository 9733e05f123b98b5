"""modelbin.saev against the standard-library reference of the protocol
(tests/reference/saev_reference.py): the writer's directory, hash and shards,
indexing, and the loader's epochs."""

import json
import os
import pickle
import sys

import numpy as np
import pytest

import modelbin
from conftest import REPO

sys.path.insert(0, str(REPO / "tests" / "reference"))
import saev_reference  # noqa: E402


def metadata(n_imgs=7, cls=True):
    return {"vit_family": "clip", "vit_ckpt": "test", "layers": [-2, -1], "n_patches_per_img": 3,
            "cls_token": cls, "d_vit": 4, "seed": 0, "n_imgs": n_imgs,
            "max_patches_per_shard": 24, "data": "synthetic"}


def images(m):
    """The reference's values, as a float32 array [n_imgs, L, T, d]."""
    L, T, D, _ = saev_reference.geometry(m)
    out = np.zeros((m["n_imgs"], L, T, D), dtype=np.float32)
    for img in range(m["n_imgs"]):
        for layer in range(L):
            for token in range(T):
                out[img, layer, token] = [saev_reference.value(img, layer, token, d) for d in range(D)]
    return out


@pytest.fixture
def dataset(tmp_path):
    m = metadata()
    with modelbin.saev.Writer(tmp_path / "ours", m) as writer:
        data = images(m)
        writer.write(data[:3])
        writer.write(data[3:])
    (path,) = (tmp_path / "ours").iterdir()
    return m, str(path)


def test_the_writer_makes_the_reference_dataset(tmp_path, dataset):
    m, ours = dataset
    theirs = saev_reference.write(str(tmp_path / "theirs"), m)
    assert os.path.basename(ours) == os.path.basename(theirs) == saev_reference.digest(m)
    shards = sorted(f for f in os.listdir(theirs) if f.endswith(".bin"))
    assert shards == sorted(f for f in os.listdir(ours) if f.endswith(".bin"))
    for shard in shards:
        with open(os.path.join(ours, shard), "rb") as a, open(os.path.join(theirs, shard), "rb") as b:
            assert a.read() == b.read(), shard
    with open(os.path.join(ours, "metadata.json")) as a:
        assert json.load(a) == m
    modelbin.verify(ours)
    # The shards are what np.memmap reads.
    L, T, D, S = saev_reference.geometry(m)
    shard0 = np.memmap(os.path.join(ours, "acts000000.bin"), dtype="<f4", mode="r").reshape(S, L, T, D)
    np.testing.assert_array_equal(shard0[:2], images(m)[:2])


def test_indexing_equals_the_reference_reader(dataset):
    m, path = dataset
    for layer, patches, per_img in [(-1, "image", 3), (-2, "cls", 1), ("all", "all", 8)]:
        ds = modelbin.saev.Dataset(path, layer=layer, patches=patches)
        assert len(ds) == m["n_imgs"] * per_img
        for i in range(len(ds)):
            img, layer_value, token = ds.coordinates(i)
            expected = saev_reference.read(path, img, layer_value, token)
            np.testing.assert_array_equal(ds[i], np.asarray(expected, dtype=np.float32))
        assert ds[-1].shape == (4,)
        with pytest.raises(IndexError):
            ds[len(ds)]
    ds = modelbin.saev.Dataset(path, layer=-1)
    np.testing.assert_array_equal(ds.get(2, -2, 0), saev_reference.read(path, 2, -2, 0))
    assert ds.metadata == m
    with pytest.raises(modelbin.FormatError):
        ds.get(99, -1, 0)
    with pytest.raises(ValueError):
        modelbin.saev.Dataset(path, patches="cls", layer=-1).get(0, 5, 0)
    with pytest.raises(ValueError):
        modelbin.saev.Dataset(path, patches="nope")


def test_the_loader_yields_each_example_once_per_epoch_deterministically(dataset):
    m, path = dataset
    ds = modelbin.saev.Dataset(path, layer="all", patches="all")
    everything = np.stack([ds[i] for i in range(len(ds))])
    loader = modelbin.saev.ShuffledLoader(path, layer="all", patches="all", batch_size=5, seed=3)
    first = np.concatenate(list(loader))
    second = np.concatenate(list(loader))
    assert first.dtype == np.float32 and first.shape == everything.shape
    for epoch in (first, second):
        np.testing.assert_array_equal(np.sort(epoch, axis=0), np.sort(everything, axis=0))
    again = modelbin.saev.ShuffledLoader(path, layer="all", patches="all", batch_size=5, seed=3)
    np.testing.assert_array_equal(np.concatenate(list(again)), first)
    copy = pickle.loads(pickle.dumps(again))
    np.testing.assert_array_equal(np.concatenate(list(copy)), first)
    ordered = modelbin.saev.ShuffledLoader(path, layer="all", patches="all", batch_size=5, shuffle=False)
    np.testing.assert_array_equal(np.concatenate(list(ordered)), everything)

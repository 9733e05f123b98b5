"""modelbin.numpy / safe_open against safetensors.numpy (the oracle), both
ways, for every dtype numpy has; zero-copy views; errors with offsets."""

import os

import ml_dtypes
import numpy as np
import pytest
import safetensors.numpy as st

import modelbin
import modelbin.numpy as mnp

DTYPES = [np.bool_, np.uint8, np.int8, np.int16, np.uint16, np.float16, np.int32, np.uint32,
          np.float32, np.float64, np.int64, np.uint64]


def sample_tensors(seed=0):
    rng = np.random.default_rng(seed)
    tensors = {}
    for i, dtype in enumerate(DTYPES):
        shape = [(2, 3), (4,), (), (1, 2, 3), (0, 5)][i % 5]
        values = rng.integers(0, 100, size=shape) if np.dtype(dtype).kind != "b" else \
            rng.integers(0, 2, size=shape)
        tensors[f"t{i}.{np.dtype(dtype).name}"] = np.asarray(values).astype(dtype)
    return tensors


def assert_same(a, b):
    assert set(a) == set(b)
    for name in a:
        assert a[name].dtype == b[name].dtype, name
        assert a[name].shape == b[name].shape, name
        np.testing.assert_array_equal(a[name], b[name])


def test_safetensors_files_interoperate_both_ways(tmp_path):
    tensors = sample_tensors()
    theirs, ours = tmp_path / "theirs.safetensors", tmp_path / "ours.safetensors"
    st.save_file(tensors, theirs, metadata={"source": "safetensors"})
    mnp.save_file(tensors, ours, metadata={"source": "safetensors"})
    assert ours.read_bytes() == theirs.read_bytes()
    assert_same(mnp.load_file(theirs), tensors)
    assert_same(st.load_file(ours), tensors)
    with modelbin.safe_open(theirs, framework="np") as f:
        assert f.metadata() == {"source": "safetensors"}
        assert sorted(f.keys()) == sorted(tensors)
        np.testing.assert_array_equal(f.get_slice("t0.bool")[1], tensors["t0.bool"][1])


def test_bytes_round_trip_in_both_formats():
    tensors = sample_tensors(1)
    data = mnp.save(tensors, metadata={"k": "v"})
    assert data == st.save(tensors, metadata={"k": "v"})
    assert_same(mnp.load(data), tensors)
    assert_same(st.load(data), tensors)
    bt = mnp.save(tensors, format="bintensors")
    assert_same(mnp.load(bt), tensors)


def test_bintensors_files_round_trip(tmp_path):
    tensors = sample_tensors(2)
    path = tmp_path / "x.bt"
    mnp.save_file(tensors, path, metadata={"a": "b"})
    assert_same(mnp.load_file(path), tensors)
    modelbin.verify(path)
    summary = modelbin.inspect(path)
    assert summary["format"] == "bintensors" and summary["tensor_count"] == len(tensors)


def test_arrays_are_read_only_views_of_the_mapping(tmp_path):
    path = tmp_path / "x.safetensors"
    st.save_file({"w": np.arange(12, dtype=np.float32).reshape(3, 4)}, path)
    w = mnp.load_file(path)["w"]
    assert not w.flags.writeable and not w.flags.owndata
    with pytest.raises(ValueError):
        w[0, 0] = 1


def test_the_real_minilm_weights_equal_safetensors_reading(minilm_dir):
    path = minilm_dir / "model.safetensors"
    ours, theirs = mnp.load_file(path), st.load_file(path)
    assert_same(ours, theirs)


def test_bfloat16_comes_back_as_ml_dtypes_and_writes_the_same_bytes(tmp_path):
    # safetensors.numpy cannot write BF16 (numpy has no such dtype): write
    # the file's bytes by hand (1.0, -2.5 as bfloat16).
    header = b'{"x":{"dtype":"BF16","shape":[2],"data_offsets":[0,4]}}'
    header += b" " * (-len(header) % 8)
    data = len(header).to_bytes(8, "little") + header + bytes([0x80, 0x3F, 0x20, 0xC0])
    path = tmp_path / "bf16.safetensors"
    path.write_bytes(data)
    x = mnp.load_file(path)["x"]
    assert x.dtype == ml_dtypes.bfloat16 and x.astype(np.float32).tolist() == [1.0, -2.5]
    assert mnp.save({"x": x}) == data


def test_broken_files_raise_format_errors_with_offsets(tmp_path):
    path = tmp_path / "x.safetensors"
    st.save_file({"w": np.zeros(4, dtype=np.float32)}, path)
    data = path.read_bytes()
    truncated = tmp_path / "truncated.safetensors"
    truncated.write_bytes(data[:-3])
    with pytest.raises(modelbin.FormatError) as info:
        modelbin.verify(truncated)
    assert info.value.offset == len(data) - 16
    bad_json = tmp_path / "json.safetensors"
    bad_json.write_bytes(data[:9] + b"!" + data[10:])
    with pytest.raises(modelbin.FormatError) as info:
        mnp.load_file(bad_json)
    assert isinstance(info.value, ValueError) and info.value.offset == 9
    with pytest.raises(FileNotFoundError):
        mnp.load_file(tmp_path / "missing.safetensors")
    with pytest.raises(ValueError, match="extension"):
        mnp.save_file({"w": np.zeros(1)}, tmp_path / "x.npy")

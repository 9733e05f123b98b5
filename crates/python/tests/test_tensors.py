"""modelbin.numpy / safe_open against safetensors (the oracle), both ways,
for every dtype (BF16 and the 8-bit floats as ml_dtypes arrays); zero-copy
views; slices and errors with safetensors' messages; errors with offsets."""

import os

import ml_dtypes
import numpy as np
import pytest
import safetensors
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


# -- safetensors' Python API: safe_open, slices, errors, every dtype --------

EVERY_DTYPE = {
    "BOOL": np.array([[True, False, True]]),
    "U8": np.arange(6, dtype=np.uint8).reshape(2, 3),
    "I8": np.array([-128, 0, 127], dtype=np.int8),
    "I16": np.array([-2, 300], dtype=np.int16),
    "U16": np.array([65535, 1], dtype=np.uint16),
    "F16": np.array([1.5, -0.25], dtype=np.float16),
    "BF16": np.array([1.0, -2.5, 3.140625], dtype=ml_dtypes.bfloat16),
    "I32": np.array([-(2**31)], dtype=np.int32),
    "U32": np.array([2**32 - 1], dtype=np.uint32),
    "F32": np.array([[0.5], [np.inf]], dtype=np.float32),
    "F64": np.array(np.pi),
    "I64": np.array([-(2**63)], dtype=np.int64),
    "U64": np.array([2**64 - 1], dtype=np.uint64),
    "F8_E4M3": np.array([448, -0.015625, 1], dtype=ml_dtypes.float8_e4m3fn),
    "F8_E5M2": np.array([57344, -1.5, 0], dtype=ml_dtypes.float8_e5m2),
}


@pytest.mark.parametrize("extension", [".safetensors", ".bt"])
def test_every_dtype_round_trips_byte_for_byte(tmp_path, extension):
    first, second = tmp_path / f"first{extension}", tmp_path / f"second{extension}"
    tensors = {name.lower(): array for name, array in EVERY_DTYPE.items()}
    mnp.save_file(tensors, first, metadata={"k": "v"})
    loaded = mnp.load_file(first)
    for name, array in tensors.items():
        assert loaded[name].dtype == array.dtype and loaded[name].shape == array.shape
        assert loaded[name].tobytes() == array.tobytes(), name
    with modelbin.safe_open(first, framework="np") as f:
        mnp.save_file(loaded, second, metadata=f.metadata())
    assert second.read_bytes() == first.read_bytes()


def test_every_dtype_reads_as_safetensors_deserializes_it():
    data = mnp.save({name.lower(): array for name, array in EVERY_DTYPE.items()})
    ours = mnp.load(data)
    theirs = dict(safetensors.deserialize(data))
    assert sorted(ours) == sorted(theirs)
    for name, array in ours.items():
        assert theirs[name]["dtype"] == name.upper()
        assert list(theirs[name]["shape"]) == list(array.shape)
        assert bytes(theirs[name]["data"]) == array.tobytes()


def test_bf16_and_float8_arrays_view_the_mapping(tmp_path):
    path = tmp_path / "x.safetensors"
    mnp.save_file({"b": EVERY_DTYPE["BF16"], "f": EVERY_DTYPE["F8_E4M3"]}, path)
    with modelbin.safe_open(path, framework="np") as f:
        for name in ("b", "f"):
            array = f.get_tensor(name)
            assert not array.flags.owndata and not array.flags.writeable
            assert np.shares_memory(array, f.get_tensor(name))


def test_the_real_minilm_file_round_trips_byte_for_byte(minilm_dir, tmp_path):
    path = minilm_dir / "model.safetensors"
    with modelbin.safe_open(path, framework="np") as f:
        metadata = f.metadata()
    copy = tmp_path / "model.safetensors"
    mnp.save_file(mnp.load_file(path), copy, metadata=metadata)
    assert copy.read_bytes() == path.read_bytes()
    with safetensors.safe_open(path, "np") as theirs, modelbin.safe_open(path, "np") as ours:
        assert ours.keys() == theirs.keys() and ours.offset_keys() == theirs.offset_keys()
        assert ours.metadata() == theirs.metadata()
        for name in ours.keys():
            a, b = ours.get_slice(name), theirs.get_slice(name)
            assert (a.get_shape(), a.get_dtype()) == (b.get_shape(), b.get_dtype())


SLICES = [
    slice(None), (), slice(2), (slice(None), slice(2)), (0, slice(2)), (slice(2, None), 0),
    (slice(2, None), -1), (slice(2, None), -5), [], (Ellipsis, 1), (1, Ellipsis),
    (slice(1, 9, 3), slice(None, None, 2)), 9, -10, np.int64(3), (slice(5, 5),),
    # Refused, with safetensors' messages.
    (slice(2, None), -6), [0, 1], (slice(2, None), 20), slice(20), (slice(None), slice(20)),
    10, (0, 0, 0), (Ellipsis, Ellipsis), slice(None, None, 0), slice(None, None, -1),
    (slice(10, None),), "a", None, (0.5,),
]


@pytest.mark.parametrize("index", SLICES, ids=repr)
def test_get_slice_matches_safetensors_results_and_errors(tmp_path, index):
    path = tmp_path / "slice.safetensors"
    mnp.save_file({"a": np.arange(50, dtype=np.float64).reshape(10, 5)}, path)
    with safetensors.safe_open(path, "np") as theirs_file, \
            modelbin.safe_open(path, "np") as ours_file:
        theirs, ours = theirs_file.get_slice("a"), ours_file.get_slice("a")
        try:
            expected = theirs[index]
        except safetensors.SafetensorError as e:
            with pytest.raises(modelbin.SafetensorError) as info:
                ours[index]
            assert str(info.value) == str(e)
            return
        got = ours[index]
        assert got.shape == expected.shape and got.dtype == expected.dtype
        np.testing.assert_array_equal(got, expected)


def test_negative_slice_bounds_count_from_the_end(tmp_path):
    # Beyond safetensors (which refuses them): as numpy reads them.
    path = tmp_path / "slice.safetensors"
    a = np.arange(50, dtype=np.int32).reshape(10, 5)
    mnp.save_file({"a": a}, path)
    with modelbin.safe_open(path, "np") as f:
        s = f.get_slice("a")
        np.testing.assert_array_equal(s[-3:], a[-3:])
        np.testing.assert_array_equal(s[:, -4:-1], a[:, -4:-1])
        with pytest.raises(modelbin.SafetensorError, match="Invalid index -11 for dimension 0"):
            s[-11:]


def test_errors_are_safetensors_own(tmp_path):
    missing = tmp_path / "missing.safetensors"
    with pytest.raises(FileNotFoundError) as info:
        modelbin.safe_open(missing, framework="np")
    assert str(info.value) == f"No such file or directory: {missing}"
    path = tmp_path / "x.safetensors"
    mnp.save_file({"w": np.zeros(2, dtype=np.float32)}, path)
    with modelbin.safe_open(path, framework="np") as f:
        with pytest.raises(modelbin.SafetensorError, match="File does not contain tensor v"):
            f.get_tensor("v")
    for closed in (f.keys, f.offset_keys, f.metadata, lambda: f.get_tensor("w"),
                   lambda: f.get_slice("w")):
        with pytest.raises(modelbin.SafetensorError, match="File is closed"):
            closed()
    with pytest.raises(modelbin.SafetensorError, match="framework tf is invalid"):
        modelbin.safe_open(path, framework="tf")
    with pytest.raises(modelbin.SafetensorError, match="Device cuda:0 is not supported"):
        modelbin.safe_open(path, framework="np", device="cuda:0")
    with pytest.raises(modelbin.FormatError) as broken:
        mnp.load(b"not a tensor file")
    assert isinstance(broken.value, modelbin.SafetensorError)
    assert isinstance(broken.value, ValueError)
    assert modelbin.SafetensorError.__module__ == "modelbin"


def test_serialize_writes_what_safetensors_writes(tmp_path):
    arrays = {"a": np.arange(6, dtype=np.float32).reshape(2, 3), "b": np.array([1, 2], np.int8),
              "c": np.array([1.5], dtype=ml_dtypes.bfloat16)}
    names = {"a": "float32", "b": "int8", "c": "bfloat16"}

    def specs(module):
        return {name: module.TensorSpec(dtype=names[name], shape=list(array.shape),
                                        data_ptr=array.ctypes.data, data_len=array.nbytes)
                for name, array in arrays.items()}

    ours = modelbin.serialize(specs(modelbin), metadata={"k": "v"})
    assert ours == bytes(safetensors.serialize(specs(safetensors), metadata={"k": "v"}))
    assert ours == mnp.save(arrays, metadata={"k": "v"})
    modelbin.serialize_file(specs(modelbin), tmp_path / "x.safetensors")
    safetensors.serialize_file(specs(safetensors), tmp_path / "y.safetensors")
    assert (tmp_path / "x.safetensors").read_bytes() == (tmp_path / "y.safetensors").read_bytes()
    spec = specs(modelbin)["c"]
    assert (spec.dtype, spec.shape, spec.data_len) == ("BF16", [1], 2)
    with pytest.raises(modelbin.SafetensorError, match="Unknown dtype 'nonsense'"):
        modelbin.TensorSpec(dtype="nonsense", shape=[1], data_ptr=0, data_len=0)
    with pytest.raises(modelbin.SafetensorError, match="not one modelbin's tensor formats store"):
        modelbin.TensorSpec(dtype="complex64", shape=[1], data_ptr=0, data_len=8)
    with pytest.raises(TypeError):
        modelbin.serialize({"a": {"dtype": "float32", "shape": [1], "data_ptr": 0,
                                  "data_len": 0}})

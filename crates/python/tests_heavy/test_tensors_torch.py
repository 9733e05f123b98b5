"""modelbin.torch and safe_open(framework="pt") against safetensors.torch
(the oracle), byte for byte, for every dtype."""

import numpy as np
import pytest
import safetensors
import safetensors.torch as st
import torch

import modelbin
import modelbin.numpy as mnp
import modelbin.torch as mt


def every_dtype():
    g = torch.Generator().manual_seed(0)
    floats = torch.randn(2, 3, generator=g)
    return {
        "bool": torch.tensor([True, False]),
        "u8": torch.arange(6, dtype=torch.uint8).reshape(2, 3),
        "i8": torch.tensor([-128, 127], dtype=torch.int8),
        "i16": torch.tensor([-2, 300], dtype=torch.int16),
        "u16": torch.tensor([65535, 1], dtype=torch.uint16),
        "f16": floats.half(),
        "bf16": floats.bfloat16(),
        "i32": torch.tensor([-(2**31)], dtype=torch.int32),
        "u32": torch.tensor([2**32 - 1], dtype=torch.uint32),
        "f32": floats,
        "f64": floats.double(),
        "i64": torch.tensor([-(2**63)], dtype=torch.int64),
        "u64": torch.tensor([2**63], dtype=torch.uint64),
        "f8_e4m3": floats.to(torch.float8_e4m3fn),
        "f8_e5m2": floats.to(torch.float8_e5m2),
        "scalar": torch.tensor(1.5),
        "empty": torch.zeros(0, 4),
    }


def raw(tensor):
    """A tensor's bytes, to compare NaNs and every dtype alike."""
    return tensor.reshape(-1).view(torch.uint8)


def assert_same(a, b):
    assert sorted(a) == sorted(b)
    for name in a:
        assert a[name].dtype == b[name].dtype and a[name].shape == b[name].shape, name
        assert torch.equal(raw(a[name]), raw(b[name])), name


def test_every_dtype_saves_as_safetensors_saves_it(tmp_path):
    tensors = every_dtype()
    assert mt.save(tensors, metadata={"k": "v"}) == st.save(tensors, metadata={"k": "v"})
    mt.save_file(tensors, tmp_path / "ours.safetensors")
    st.save_file(tensors, tmp_path / "theirs.safetensors")
    assert (tmp_path / "ours.safetensors").read_bytes() == \
        (tmp_path / "theirs.safetensors").read_bytes()
    assert_same(mt.load_file(tmp_path / "theirs.safetensors"), tensors)
    assert_same(st.load_file(tmp_path / "ours.safetensors"), tensors)
    assert_same(mt.load(st.save(tensors)), tensors)


def test_bintensors_round_trip_byte_for_byte(tmp_path):
    first, second = tmp_path / "a.bt", tmp_path / "b.bt"
    mt.save_file(every_dtype(), first)
    loaded = mt.load_file(first)
    assert_same(loaded, every_dtype())
    mt.save_file(loaded, second)
    assert second.read_bytes() == first.read_bytes()


def test_torch_and_numpy_faces_agree_on_the_bytes(tmp_path):
    path = tmp_path / "x.safetensors"
    mt.save_file(every_dtype(), path)
    arrays, tensors = mnp.load_file(path), mt.load_file(path)
    for name, tensor in tensors.items():
        assert raw(tensor).numpy().tobytes() == arrays[name].tobytes(), name
    assert mnp.save(arrays) == mt.save(tensors) == path.read_bytes()


def test_tensors_are_writable_views_that_leave_the_file_alone(tmp_path):
    path = tmp_path / "x.safetensors"
    st.save_file({"w": torch.arange(6, dtype=torch.float32)}, path)
    before = path.read_bytes()
    with modelbin.safe_open(path, framework="pt") as f:
        w = f.get_tensor("w")
        assert w.data_ptr() == f.get_tensor("w").data_ptr()
        w += 1
    assert path.read_bytes() == before
    assert mt.load_file(path)["w"].tolist() == [0, 1, 2, 3, 4, 5]


def test_the_real_minilm_weights_equal_safetensors_reading(minilm_dir):
    path = minilm_dir / "model.safetensors"
    ours, theirs = mt.load_file(path), st.load_file(path)
    assert list(ours) == list(theirs)
    assert_same(ours, theirs)
    with open(path, "rb") as f:
        data = f.read()
    with modelbin.safe_open(path, framework="pt") as g:
        metadata = g.metadata()
    assert mt.save(ours, metadata=metadata) == data


@pytest.mark.parametrize("index", [slice(None), (), slice(2), (slice(None), slice(2)),
                                   (0, slice(2)), (slice(2, None), -1), [], (Ellipsis, 3),
                                   (slice(1, None, 4), slice(None, None, 2)),
                                   (slice(2, None), 20), [0, 1], slice(20), (0, 0, 0)],
                         ids=repr)
def test_get_slice_gives_safetensors_tensors(tmp_path, index):
    # safetensors slices torch tensors with torch's indexing (lists, clamped
    # bounds, IndexError), unlike numpy arrays.
    path = tmp_path / "slice.safetensors"
    st.save_file({"a": torch.randn(10, 5).bfloat16()}, path)
    with safetensors.safe_open(path, "pt") as theirs_file, \
            modelbin.safe_open(path, "pt") as ours_file:
        theirs, ours = theirs_file.get_slice("a"), ours_file.get_slice("a")
        assert (ours.get_shape(), ours.get_dtype()) == (theirs.get_shape(), "BF16")
        try:
            expected = theirs[index]
        except Exception as e:
            with pytest.raises(type(e)) as info:
                ours[index]
            assert str(info.value) == str(e)
            return
        got = ours[index]
        assert got.dtype == expected.dtype and torch.equal(got, expected)


def test_saving_refuses_what_safetensors_refuses():
    m = torch.randn(10)
    shared = {"a": m, "b": m[:5]}
    for module in (mt, st):
        with pytest.raises(RuntimeError, match="Some tensors share memory") as info:
            module.save(shared)
        assert "[{'a', 'b'}]" in str(info.value) or "[{'b', 'a'}]" in str(info.value)
        with pytest.raises(ValueError, match="non contiguous tensor: `t`"):
            module.save({"t": torch.randn(3, 4).t()})
        with pytest.raises(ValueError, match="expected torch.Tensor"):
            module.save({"t": np.zeros(2)})
        with pytest.raises(ValueError, match="sparse tensors"):
            module.save({"t": torch.eye(2).to_sparse()})
    # Disjoint parts of one storage are not shared.
    assert mt._find_shared_tensors({"a": m[:5], "b": m[5:]}) == \
        st._find_shared_tensors({"a": m[:5], "b": m[5:]}) == [{"a"}, {"b"}]
    assert (mt.storage_ptr(m[3:]), mt.storage_size(m[3:])) == \
        (st.storage_ptr(m[3:]), st.storage_size(m[3:]))


def test_missing_and_closed_files_raise_as_safetensors(tmp_path):
    with pytest.raises(FileNotFoundError) as info:
        mt.load_file(tmp_path / "nope.safetensors")
    assert str(info.value) == f"No such file or directory: {tmp_path / 'nope.safetensors'}"
    path = tmp_path / "x.safetensors"
    mt.save_file({"w": torch.zeros(2)}, path)
    with modelbin.safe_open(path, framework="torch", device="cpu") as f:
        pass
    with pytest.raises(modelbin.SafetensorError, match="File is closed"):
        f.get_tensor("w")

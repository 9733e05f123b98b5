"""Inputs that are not regular files: a FIFO with no writer, or a device
node, named where a file is read whole, raises at once (the library's one
rule for inputs, `modelbin_format::source`), instead of blocking the
interpreter or reading without end. Each call runs in a child process with
a timeout, so that a regression fails the test instead of hanging it."""

import os
import subprocess
import sys
import textwrap

import pytest

PROCESSOR = ('{"image_processor_type": "BitImageProcessor", "do_resize": false, '
             '"do_center_crop": true, "crop_size": {"height": 8, "width": 8}, '
             '"do_rescale": true, "do_normalize": false}')


def outcome(code: str) -> str:
    """What the snippet `code` raised, as ``Class: message``, or ``ok``."""
    program = textwrap.dedent(f"""
        import modelbin, modelbin.numpy, modelbin.vision
        try:
            {code}
            print("ok")
        except Exception as e:
            print(f"{{type(e).__name__}}: {{e}}")
    """)
    done = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


@pytest.fixture
def fifo(tmp_path):
    path = tmp_path / "x.safetensors"
    os.mkfifo(path)
    return path


def test_tensor_files_that_are_fifos_raise_at_once(fifo):
    for call in (f"modelbin.safe_open({str(fifo)!r}, framework='np')",
                 f"modelbin.numpy.load_file({str(fifo)!r})"):
        assert outcome(call) == f"OSError: {fifo}: is a FIFO, not a regular file", call


def test_a_missing_tensor_file_keeps_safetensors_wording(tmp_path):
    missing = tmp_path / "missing.safetensors"
    assert outcome(f"modelbin.safe_open({str(missing)!r})") == \
        f"FileNotFoundError: No such file or directory: {missing}"


@pytest.fixture
def model(tmp_path):
    """A model directory with nothing in it yet."""
    path = tmp_path / "model"
    path.mkdir()
    return path


def test_image_processor_configs_and_images_that_are_special_files_raise_at_once(model, tmp_path):
    config = model / "preprocessor_config.json"
    os.mkfifo(config)
    assert outcome(f"modelbin.vision.ImageProcessor({str(model)!r})") == \
        f"OSError: {config}: is a FIFO, not a regular file"
    config.unlink()
    config.write_text(PROCESSOR)
    image = tmp_path / "x.png"
    os.mkfifo(image)
    processor = f"modelbin.vision.ImageProcessor({str(model)!r})"
    assert outcome(f"{processor}.pixel_values([{str(image)!r}])") == \
        f"OSError: {image}: is a FIFO, not a regular file"


def test_oversized_processor_configs_raise_before_reading(model):
    config = model / "preprocessor_config.json"
    config.write_text(PROCESSOR)
    os.truncate(config, 300_000_000)
    got = outcome(f"modelbin.vision.ImageProcessor({str(model)!r})")
    assert "is 300000000 bytes, over the limit of 1048576 bytes" in got, got

"""The runs' defaults are one set, owned by the library: what the command
line's flags show in `--help`, what Python's keywords take when left as None
(they pass None through to the library), and the library's own
(`modelbin._native.defaults()`)."""

import inspect
import json
import re
import subprocess

import pytest

import modelbin
from modelbin import _native

LIBRARY = json.loads(_native.defaults())

# (the command, the Python function, the library's set, and for each
# keyword its flag).
CASES = [
    (["sae", "train"], modelbin.sae.train, "sae_train", {
        "d_sae": "--d-sae", "architecture": "--architecture", "k": "--k",
        "l1_coeff": "--l1-coeff", "l0_coeff": "--l0-coeff", "bandwidth": "--bandwidth",
        "steps": "--steps", "batch_size": "--batch-size",
        "lr": "--lr", "seed": "--seed", "dead_after": "--dead-after",
        "checkpoint_every": "--checkpoint-every"}),
    (["acts", "record"], modelbin.acts.record, "acts_record", {
        "layers": "--layers", "max_patches_per_shard": "--max-patches-per-shard",
        "site": "--site"}),
    (["tllm", "train"], modelbin.TLLM.train, "tllm_train", {
        "dim": "--dim", "layers": "--layers", "heads": "--heads", "ffn": "--ffn",
        "seq": "--seq", "dropout": "--dropout", "batch_size": "--batch-size",
        "steps": "--steps", "lr": "--lr", "weight_decay": "--weight-decay", "clip": "--clip",
        "seed": "--seed", "val_fraction": "--val-fraction", "eval_every": "--eval-every",
        "checkpoint_every": "--checkpoint-every"}),
]


def help_defaults(cli, command):
    """Each flag's `[default: …]` in `modelbin COMMAND --help`."""
    text = subprocess.run([str(cli), *command, "--help"], capture_output=True, text=True,
                          check=True).stdout
    defaults = {}
    flag = None
    for line in text.splitlines():
        named = re.match(r"\s+(?:-\w, )?(--[\w-]+)", line)
        if named:
            flag = named.group(1)
        found = re.search(r"\[default: ([^\]]*)\]", line)
        if found and flag is not None:
            defaults[flag] = found.group(1)
    return defaults


def same(library, shown):
    if isinstance(library, list):
        return ",".join(str(v) for v in library) == shown
    if isinstance(library, (int, float)) and not isinstance(library, bool):
        return float(library) == float(shown)
    return str(library) == shown


@pytest.mark.parametrize("command, function, key, flags", CASES, ids=["sae", "acts", "tllm"])
def test_the_command_line_python_and_the_library_share_one_set_of_defaults(
        cli, command, function, key, flags):
    library = LIBRARY[key]
    assert set(library) == set(flags)
    shown = help_defaults(cli, command)
    parameters = inspect.signature(function).parameters
    for keyword, flag in flags.items():
        assert same(library[keyword], shown[flag]), (keyword, library[keyword], shown[flag])
        # Left out, the keyword is None, which the library fills.
        assert parameters[keyword].default is None, keyword
    exposed = {"sae_train": modelbin.sae.TRAIN_DEFAULTS,
               "acts_record": modelbin.acts.RECORD_DEFAULTS,
               "tllm_train": modelbin.models.TRAIN_DEFAULTS}[key]
    assert exposed == library

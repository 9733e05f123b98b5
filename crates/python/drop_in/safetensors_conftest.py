"""conftest.py of safetensors' own test_simple.py when it runs against
modelbin: binds `safetensors`, `safetensors.numpy` and `safetensors.torch`
to modelbin, modelbin.numpy and modelbin.torch, and checks that the
binding took."""

import sys

import modelbin
import modelbin.numpy
import modelbin.torch

sys.modules["safetensors"] = modelbin
sys.modules["safetensors.numpy"] = modelbin.numpy
sys.modules["safetensors.torch"] = modelbin.torch

import safetensors  # noqa: E402
import safetensors.numpy  # noqa: E402
import safetensors.torch  # noqa: E402

assert safetensors is modelbin, "safetensors' suite must run against modelbin"
assert safetensors.numpy is modelbin.numpy and safetensors.torch is modelbin.torch

"""`import safetensors` (and its `numpy` and `torch` modules) as modelbin:
puts modelbin, modelbin.numpy and modelbin.torch in their places in
sys.modules, so safetensors' own test suite (and any subprocess it starts)
runs against modelbin. Only on the drop-in suites' PYTHONPATH."""

import sys

import modelbin
import modelbin.numpy
import modelbin.torch

sys.modules["safetensors.numpy"] = modelbin.numpy
sys.modules["safetensors.torch"] = modelbin.torch
sys.modules[__name__] = modelbin

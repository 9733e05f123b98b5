"""conftest.py of tiktoken's own test suite when it runs against modelbin:
binds `tiktoken` to modelbin and checks that the binding took."""

import sys

import modelbin

sys.modules["tiktoken"] = modelbin

import tiktoken  # noqa: E402

assert tiktoken is modelbin, "tiktoken's suite must run against modelbin"

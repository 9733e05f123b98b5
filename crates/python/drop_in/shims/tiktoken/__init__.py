"""`import tiktoken` as modelbin: puts modelbin in tiktoken's place in
sys.modules, so tiktoken's own test suite (and any subprocess it starts)
runs against modelbin. Only on the drop-in suites' PYTHONPATH."""

import sys

import modelbin

sys.modules[__name__] = modelbin

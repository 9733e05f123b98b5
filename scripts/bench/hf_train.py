#!/usr/bin/env python3
"""Trains a byte-level BPE tokenizer.json with Hugging Face `tokenizers`, for
the tokenizer.json benchmark (scripts/bench/hf_tokenizer.sh).

usage: hf_train.py STYLE VOCAB_SIZE OUT.json
  STYLE gpt2:   ByteLevel pre-tokenizer (GPT-2, Pythia)
  STYLE llama3: Split(Llama 3 regex) + ByteLevel(use_regex=False)

Training text is on the machine, nothing is downloaded: CPython's standard
library (.py), Vim's help files, and tests/data/opticks.txt; at most 24 MB,
read in sorted path order so the result is deterministic. The benchmark
corpus (scripts/bench/corpus.py) is not used for training.
"""

import glob
import os
import sys
import sysconfig

from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers, processors, trainers

LLAMA3 = (
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*"
    r"|\s*[\r\n]+|\s+(?!\S)|\s+"
)
LIMIT = 24 << 20


def texts():
    root = os.path.join(os.path.dirname(__file__), "..", "..")
    paths = [os.path.join(root, "tests/data/opticks.txt")]
    paths += sorted(glob.glob("/usr/share/vim/vim*/doc/*.txt"))
    paths += sorted(glob.glob(os.path.join(sysconfig.get_paths()["stdlib"], "**/*.py"), recursive=True))
    total = 0
    for path in paths:
        try:
            with open(path, encoding="utf-8") as f:
                text = f.read()
        except (UnicodeDecodeError, OSError):
            continue
        total += len(text)
        if total > LIMIT:
            return
        yield text


def main():
    style, size, out = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    t = Tokenizer(models.BPE())
    if style == "gpt2":
        t.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
        special = "<|endoftext|>"
    else:
        t.pre_tokenizer = pre_tokenizers.Sequence(
            [
                pre_tokenizers.Split(Regex(LLAMA3), behavior="isolated", invert=False),
                pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
            ]
        )
        special = "<|begin_of_text|>"
    t.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=size,
        special_tokens=[special],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    t.train_from_iterator(texts(), trainer)
    t.post_processor = processors.ByteLevel(trim_offsets=False)
    os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
    t.save(out)


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""ONNX Runtime baseline for all-MiniLM-L6-v2 sentence embeddings (benchmark anchor).

Builds an ONNX graph of the BERT encoder straight from `model.safetensors` +
`config.json` (no torch/transformers), caches it, and either checks it against
the golden embeddings or measures throughput.

Graph: input_ids, attention_mask (int64 [batch, seq]) -> sentence_embedding
(float32 [batch, hidden]). Word + position (0..seq-1) + token-type-0 embeddings,
post-LayerNorm BERT layers (eps from config), attention scale 1/sqrt(head_dim),
additive -10000 on padded keys, exact erf GELU, then mean pooling over the mask
and L2 normalisation. Opset 17, laid out like a transformers export so that
ORT_ENABLE_ALL can apply its fusions (LayerNorm, Gelu, Attention, ...).

Setup:  python3 -m pip install -r scripts/bench/requirements.txt
        (a plain install worked here; on an "externally managed environment"
        add --break-system-packages)

Usage (paths relative to the repository root are the defaults):
  python3 scripts/bench/minilm_onnx.py --check tests/data/minilm
  python3 scripts/bench/minilm_onnx.py --ids ids.jsonl --threads 2 \
      [--batch-size 1] [--seconds 3] [--model-dir DIR] [--onnx FILE]

--check prints the minimum cosine vs the golden embeddings (each sentence
alone, batch 1, no padding) and exits 1 if it is below 0.9999. Bench mode prints
one JSON line to stdout; every diagnostic goes to stderr.
"""
import argparse
import json
import math
import os
import struct
import sys
import time

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
DEFAULT_MODEL = os.path.join(ROOT, "target/test-data/all-MiniLM-L6-v2")
DEFAULT_ONNX = os.path.join(ROOT, "target/bench-data/all-MiniLM-L6-v2.onnx")
DTYPES = {"F32": np.float32, "F16": np.float16, "I64": np.int64, "I32": np.int32}


def log(*a):
    print(*a, file=sys.stderr, flush=True)


def read_safetensors(path):
    """Return {name: np.ndarray} from a safetensors file (little-endian data)."""
    with open(path, "rb") as f:
        (n,) = struct.unpack("<Q", f.read(8))
        header = json.loads(f.read(n))
        data = f.read()
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        a, b = info["data_offsets"]
        dt = np.dtype(DTYPES[info["dtype"]]).newbyteorder("<")
        out[name] = np.frombuffer(data[a:b], dtype=dt).reshape(info["shape"]).astype(dt.newbyteorder("="))
    return out


def build_model(model_dir):
    """Build the encoder + pooling graph as an onnx.ModelProto."""
    cfg = json.load(open(os.path.join(model_dir, "config.json")))
    w = read_safetensors(os.path.join(model_dir, "model.safetensors"))
    hid, heads, eps = cfg["hidden_size"], cfg["num_attention_heads"], cfg["layer_norm_eps"]
    hd = hid // heads
    nodes, inits = [], []

    def const(name, arr):
        inits.append(numpy_helper.from_array(np.asarray(arr), name))
        return name

    def node(op, ins, name, **attrs):
        nodes.append(helper.make_node(op, ins, [name], name=name + "_" + op, **attrs))
        return name

    def linear(x, prefix, out):  # x @ W^T + b, weights stored [out, in]
        wt = const(prefix + ".weight_T", np.ascontiguousarray(w[prefix + ".weight"].T))
        mm = node("MatMul", [x, wt], out + "_mm")
        return node("Add", [mm, const(prefix + ".bias", w[prefix + ".bias"])], out)

    def layer_norm(x, prefix, out):
        return node("LayerNormalization", [x, const(prefix + ".weight", w[prefix + ".weight"]),
                                           const(prefix + ".bias", w[prefix + ".bias"])],
                    out, axis=-1, epsilon=eps)

    f32 = lambda v: np.array(v, dtype=np.float32)
    i64 = lambda v: np.array(v, dtype=np.int64)

    # Embeddings: word + position (0..seq-1) + token type 0.
    shape = node("Shape", ["input_ids"], "ids_shape")
    seq = node("Gather", [shape, const("one_i", i64(1))], "seq_len", axis=0)
    pos = node("Range", [const("zero_i", i64(0)), seq, const("one_i2", i64(1))], "position_ids")
    e = node("Gather", [const("embeddings.word_embeddings.weight", w["embeddings.word_embeddings.weight"]),
                        "input_ids"], "word_emb", axis=0)
    p = node("Gather", [const("embeddings.position_embeddings.weight",
                              w["embeddings.position_embeddings.weight"]), pos], "pos_emb", axis=0)
    e = node("Add", [e, p], "emb_wp")
    e = node("Add", [e, const("token_type_0", w["embeddings.token_type_embeddings.weight"][0])], "emb_sum")
    h = layer_norm(e, "embeddings.LayerNorm", "emb_out")

    # Attention bias [batch, 1, 1, seq]: 0 for real keys, -10000 for padding.
    m4 = node("Unsqueeze", ["attention_mask", const("axes_12", i64([1, 2]))], "mask4")
    m4 = node("Cast", [m4], "mask4_f", to=TensorProto.FLOAT)
    m4 = node("Sub", [const("one_f", f32(1.0)), m4], "mask4_inv")
    mask_bias = node("Mul", [m4, const("neg_big", f32(-10000.0))], "mask_bias")

    split_shape = const("split_heads", i64([0, 0, heads, hd]))
    merge_shape = const("merge_heads", i64([0, 0, hid]))
    scale = const("sqrt_hd", f32(math.sqrt(hd)))
    for i in range(cfg["num_hidden_layers"]):
        L, t = f"encoder.layer.{i}.", f"l{i}_"
        q = node("Reshape", [linear(h, L + "attention.self.query", t + "q"), split_shape], t + "q4")
        k = node("Reshape", [linear(h, L + "attention.self.key", t + "k"), split_shape], t + "k4")
        v = node("Reshape", [linear(h, L + "attention.self.value", t + "v"), split_shape], t + "v4")
        q = node("Transpose", [q], t + "qT", perm=[0, 2, 1, 3])
        k = node("Transpose", [k], t + "kT", perm=[0, 2, 3, 1])
        v = node("Transpose", [v], t + "vT", perm=[0, 2, 1, 3])
        s = node("Div", [node("MatMul", [q, k], t + "qk"), scale], t + "scores")
        s = node("Softmax", [node("Add", [s, mask_bias], t + "masked")], t + "probs", axis=-1)
        c = node("Transpose", [node("MatMul", [s, v], t + "ctx4")], t + "ctxT", perm=[0, 2, 1, 3])
        c = node("Reshape", [c, merge_shape], t + "ctx")
        a = linear(c, L + "attention.output.dense", t + "attn_out")
        h = layer_norm(node("Add", [a, h], t + "attn_res"), L + "attention.output.LayerNorm", t + "attn_ln")
        f = linear(h, L + "intermediate.dense", t + "ffn_in")
        g = node("Erf", [node("Div", [f, const(t + "sqrt2", f32(math.sqrt(2.0)))], t + "gelu_div")], t + "gelu_erf")
        g = node("Add", [g, const(t + "one", f32(1.0))], t + "gelu_add")
        g = node("Mul", [node("Mul", [f, g], t + "gelu_mul"), const(t + "half", f32(0.5))], t + "gelu")
        o = linear(g, L + "output.dense", t + "ffn_out")
        h = layer_norm(node("Add", [o, h], t + "ffn_res"), L + "output.LayerNorm", t + "out")

    # Mean pooling over the mask, then L2 normalisation.
    m3 = node("Cast", [node("Unsqueeze", ["attention_mask", const("axis_2", i64([2]))], "mask3")],
              "mask3_f", to=TensorProto.FLOAT)
    ax1 = const("axis_1", i64([1]))
    summed = node("ReduceSum", [node("Mul", [h, m3], "masked_h"), ax1], "sum_h", keepdims=0)
    count = node("Max", [node("ReduceSum", [m3, ax1], "count_raw", keepdims=0),
                         const("min_count", f32(1e-9))], "count")
    mean = node("Div", [summed, count], "mean")
    sq = node("ReduceSum", [node("Mul", [mean, mean], "sq"), const("axis_m1", i64([-1]))], "sumsq", keepdims=1)
    norm = node("Max", [node("Sqrt", [sq], "norm_raw"), const("min_norm", f32(1e-12))], "norm")
    node("Div", [mean, norm], "sentence_embedding")

    dims = ["batch", "seq"]
    graph = helper.make_graph(
        nodes, "all-MiniLM-L6-v2",
        [helper.make_tensor_value_info("input_ids", TensorProto.INT64, dims),
         helper.make_tensor_value_info("attention_mask", TensorProto.INT64, dims)],
        [helper.make_tensor_value_info("sentence_embedding", TensorProto.FLOAT, ["batch", hid])],
        inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)],
                              producer_name="minilm_onnx.py")
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model


def session(args, threads):
    if not os.path.exists(args.onnx):
        log(f"building {args.onnx} from {args.model_dir}")
        os.makedirs(os.path.dirname(os.path.abspath(args.onnx)), exist_ok=True)
        onnx.save(build_model(args.model_dir), args.onnx)
    path = args.onnx
    if getattr(args, "int8", False):
        # onnxruntime's own dynamic int8 model of the same graph: int8
        # weights per output channel, activations quantized at run time.
        from onnxruntime.quantization import QuantType, quantize_dynamic
        path = args.onnx.removesuffix(".onnx") + "-int8.onnx"
        if not os.path.exists(path):
            log(f"quantizing {args.onnx} -> {path}")
            quantize_dynamic(args.onnx, path, weight_type=QuantType.QInt8, per_channel=True)
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    so.intra_op_num_threads = threads
    so.inter_op_num_threads = 1
    return ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])


def read_jsonl(path):
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f.read().split("\n") if line.strip()]


def check(args):
    sess = session(args, args.threads)
    toks = read_jsonl(os.path.join(args.check, "tokens.jsonl"))
    gold = read_jsonl(os.path.join(args.check, "embeddings.jsonl"))
    assert len(toks) == len(gold), "tokens/embeddings line counts differ"
    cos, maxdiff = [], 0.0
    for ids, ref in zip(toks, gold):
        x = np.array([ids], dtype=np.int64)
        out = sess.run(None, {"input_ids": x, "attention_mask": np.ones_like(x)})[0][0].astype(np.float64)
        ref = np.array(ref, dtype=np.float32).astype(np.float64)
        cos.append(out @ ref / (np.linalg.norm(out) * np.linalg.norm(ref)))
        maxdiff = max(maxdiff, float(np.abs(out - ref).max()))
    worst = int(np.argmin(cos))
    log(f"{len(cos)} sentences, worst line {worst} (len {len(toks[worst])}), max |diff| {maxdiff:.3g}")
    print(f"min_cosine {min(cos):.12f}")
    # The int8 model is reported, not held to the float model's bar.
    return 0 if args.int8 or min(cos) >= 0.9999 else 1


def make_batches(lines, bs):
    """Consecutive groups of bs sentences, padded with id 0 / mask 0."""
    batches = []
    for i in range(0, len(lines), bs):
        group = lines[i:i + bs]
        n = max(len(s) for s in group)
        ids = np.zeros((len(group), n), dtype=np.int64)
        mask = np.zeros_like(ids)
        for r, s in enumerate(group):
            ids[r, :len(s)] = s
            mask[r, :len(s)] = 1
        batches.append({"input_ids": ids, "attention_mask": mask})
    return batches


def bench(args):
    sess = session(args, args.threads)
    batches = make_batches(read_jsonl(args.ids), args.batch_size)
    for b in batches:  # warm-up pass
        sess.run(None, b)
    count, t0 = 0, time.perf_counter()
    while True:
        for b in batches:
            sess.run(None, b)
            count += len(b["input_ids"])
        elapsed = time.perf_counter() - t0
        if elapsed >= args.seconds:
            break
    print(json.dumps({"engine": "onnxruntime", "int8": args.int8, "version": ort.__version__, "threads": args.threads,
                      "batch_size": args.batch_size, "sentences": count, "seconds": round(elapsed, 4),
                      "sentences_per_s": round(count / elapsed, 2)}))
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model-dir", default=DEFAULT_MODEL)
    ap.add_argument("--onnx", default=DEFAULT_ONNX, help="cached graph; built only when missing")
    mode = ap.add_mutually_exclusive_group(required=True)
    mode.add_argument("--check", metavar="GOLDEN_DIR")
    mode.add_argument("--ids", metavar="FILE.jsonl")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--batch-size", type=int, default=1)
    ap.add_argument("--seconds", type=float, default=3.0)
    ap.add_argument("--int8", action="store_true", help="run onnxruntime's quantize_dynamic model of the graph")
    args = ap.parse_args()
    return check(args) if args.check else bench(args)


if __name__ == "__main__":
    sys.exit(main())

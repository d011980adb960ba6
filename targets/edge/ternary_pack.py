"""A real 2-bit ternary file: ONNX Runtime's MatMulNBits (bits=2) for Linear layers, 2-bit packed convs.

Ternarisation follows ternary weight networks (TWN): per output channel, weights with
|w| <= 0.7 * mean|w| become 0 and the rest +-a, where a is the mean |w| of the kept ones.

Linear layers (ONNX MatMul/Gemm with a constant weight) become com.microsoft MatMulNBits with
bits=2: codes 0..3 where code - 2 is the ternary sign, zero point 2 (the op's default, so not
stored), and one fp32 scale per block
of `block_size` input values (every block of a channel carries that channel's a). Convolutions
have no 2-bit kernel in ONNX Runtime: their ternary values are stored 2-bit packed too (a uint8
initializer, four codes per byte) with a per-channel fp32 scale, and a small chain of standard
ops (BitShift, Mod, Cast, Sub, Split, Reshape, Mul) unpacks them into the fp32 Conv weight. Every input of
that chain is a constant, so ONNX Runtime's constant folding runs it once when the session is
created: the file on disk is 2-bit, the Conv computes in fp32 at the same speed as before.
(`conv_storage="int8"` keeps the older layout, INT8 codes behind a DequantizeLinear, for
comparison.) Every other layer stays fp32. Only numpy and onnx are used.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

THRESHOLD_FACTOR = 0.7
BLOCK_SIZE = 128  # ONNX Runtime 1.32 has an int8-compute 2-bit kernel at 128; at 256 it falls back
ZERO_POINT = 2
MS_DOMAIN = "com.microsoft"

PACKED = "packed 2-bit (MatMulNBits)"
CONV_PACKED = "stored 2-bit packed, unpacked at load, computes fp32"
INT8_CODES = "ternary as INT8 codes (DequantizeLinear, fp32 Conv)"
UNPACK_MARK = "unpack2bit"  # the name suffix of the node whose output is an unpacked conv weight


@dataclass(frozen=True)
class LayerPlan:
    """What the packer did with one weighted layer: how it is stored and runs, and why."""

    name: str
    op: str
    storage: str  # PACKED, INT8_CODES, or "fp32"
    weights: int
    zero_fraction: float = 0.0
    why: str = ""

    def to_info(self) -> dict:
        """A JSON-ready row for results.json and the report's layer table."""
        return {"layer": self.name, "op": self.op, "storage": self.storage, "weights": self.weights,
                "zero_fraction": round(self.zero_fraction, 4), "why": self.why}


@dataclass(frozen=True)
class PackResult:
    """The packed file and what happened to each layer."""

    path: Path
    layers: tuple[LayerPlan, ...]
    block_size: int
    debug_bytes_dropped: int = 0  # the exporter's debug metadata left out of the file (see strip_debug_info)

    @property
    def packed_layers(self) -> int:
        """How many layers run on the 2-bit kernel."""
        return sum(1 for layer in self.layers if layer.storage == PACKED)

    @property
    def ternary_layers(self) -> int:
        """How many layers hold ternary values (packed, packed for unpacking at load, or as INT8 codes)."""
        return sum(1 for layer in self.layers if layer.storage in (PACKED, CONV_PACKED, INT8_CODES))


class NoTernaryLayersError(ValueError):
    """The graph has no Linear or convolution weight that ternarisation could apply to."""


def ternarize_rows(weight: np.ndarray, factor: float = THRESHOLD_FACTOR) -> tuple[np.ndarray, np.ndarray]:
    """(signs in {-1, 0, 1} as int8, per-row scale a as float32) for a [channels, ...] weight."""
    flat = np.asarray(weight, dtype=np.float32).reshape(weight.shape[0], -1)
    magnitude = np.abs(flat)
    keep = magnitude > factor * magnitude.mean(axis=1, keepdims=True)
    # An all-zero row keeps nothing: max(.., 1) avoids 0/0 and leaves its scale at 0.
    alpha = (magnitude * keep).sum(axis=1) / np.maximum(keep.sum(axis=1), 1)
    signs = (np.sign(flat) * keep).astype(np.int8).reshape(weight.shape)
    return signs, alpha.astype(np.float32)


def pack_2bit(signs: np.ndarray, alpha: np.ndarray, block_size: int = BLOCK_SIZE
              ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """MatMulNBits inputs (B, scales, zero_points) for an [N, K] sign matrix and per-row scales.

    B is uint8 [N, blocks, block_size/4]: four 2-bit codes per byte, the first in the low bits;
    K is padded to whole blocks with the zero-point code. Scales are [N*blocks]; zero points are
    packed four per byte, [N * ceil(blocks/4)].
    """
    if block_size < 16 or block_size & (block_size - 1):
        raise ValueError(f"block_size must be a power of two of at least 16, got {block_size}")
    n, k = signs.shape
    blocks = -(-k // block_size)
    codes = np.full((n, blocks * block_size), ZERO_POINT, dtype=np.uint8)
    codes[:, :k] = (signs.astype(np.int16) + ZERO_POINT).astype(np.uint8)
    quads = codes.reshape(n, blocks, block_size // 4, 4)
    packed = quads[..., 0] | (quads[..., 1] << 2) | (quads[..., 2] << 4) | (quads[..., 3] << 6)
    scales = np.repeat(alpha.astype(np.float32)[:, None], blocks, axis=1).reshape(-1)
    zp_bytes = -(-blocks // 4)
    zp = np.zeros((n, zp_bytes * 4), dtype=np.uint8)
    zp[:, :blocks] = ZERO_POINT
    zq = zp.reshape(n, zp_bytes, 4)
    zero_points = (zq[..., 0] | (zq[..., 1] << 2) | (zq[..., 2] << 4) | (zq[..., 3] << 6)).reshape(-1)
    return packed.astype(np.uint8), scales, zero_points.astype(np.uint8)


def unpack_2bit(packed: np.ndarray, scales: np.ndarray, k: int) -> np.ndarray:
    """The dequantised [N, K] float32 weight a MatMulNBits node computes with (zero point 2)."""
    n, blocks, _ = packed.shape
    shifts = np.array([0, 2, 4, 6], dtype=np.uint8)
    codes = (packed[..., None] >> shifts) & 3
    values = codes.reshape(n, blocks, -1).astype(np.float32) - ZERO_POINT
    values *= scales.reshape(n, blocks, 1)
    return values.reshape(n, -1)[:, :k]


def pack_onnx(source: Path, dest: Path, *, block_size: int = BLOCK_SIZE, accuracy_level: int = 4,
              factor: float = THRESHOLD_FACTOR, conv_storage: str = "packed") -> PackResult:
    """Write `dest`: the `source` graph with ternary Linear layers packed at 2 bits and ternary convs.

    `conv_storage` is "packed" (2 bits per weight on disk, unpacked to fp32 at session creation)
    or "int8" (INT8 codes behind a DequantizeLinear). Raises NoTernaryLayersError when no
    MatMul/Gemm/Conv has a constant weight.
    """
    if conv_storage not in ("packed", "int8"):
        raise ValueError(f"conv_storage must be 'packed' or 'int8', got {conv_storage!r}")
    import onnx
    from onnx import helper, numpy_helper

    model = onnx.load(str(source))
    graph = model.graph
    inits = {init.name: init for init in graph.initializer}
    uses: dict[str, int] = {}
    for node in graph.node:
        for name in node.input:
            uses[name] = uses.get(name, 0) + 1
    layers: list[LayerPlan] = []
    new_nodes: list[Any] = []
    new_inits: list[Any] = []
    dropped: set[str] = set()
    made: dict[str, str] = {}  # conv weight -> its ternary tensor (a weight shared by two convs is stored once)
    to_unpack: list[tuple[str, np.ndarray, np.ndarray, str]] = []  # (weight name, signs, alpha, output name)

    for node in graph.node:
        weight_name = node.input[1] if len(node.input) > 1 else ""
        init = inits.get(weight_name)
        label = node.name or f"{node.op_type}:{node.output[0]}"
        if node.op_type in ("MatMul", "Gemm") and init is not None and len(init.dims) == 2:
            replaced = _linear(node, numpy_helper.to_array(init), label, f"t2l{len(layers)}", block_size,
                               accuracy_level, factor, helper, numpy_helper)
            if replaced is None:
                layers.append(LayerPlan(label, node.op_type, "fp32", int(np.prod(init.dims)),
                                        why="Gemm with transA, alpha or beta other than the default"))
                new_nodes.append(node)
                continue
            nodes, tensors, plan = replaced
            new_nodes.extend(nodes)
            new_inits.extend(tensors)
            layers.append(plan)
            uses[weight_name] -= 1
            if uses[weight_name] == 0:
                dropped.add(weight_name)
            continue
        if node.op_type == "Conv" and init is not None and len(init.dims) >= 3:
            weight = numpy_helper.to_array(init)
            signs, alpha = ternarize_rows(weight, factor)
            if weight_name not in made:
                if conv_storage == "packed":
                    made[weight_name] = f"t2w{len(to_unpack)}"  # short: every name is stored in the file, twice
                    to_unpack.append((weight_name, signs, alpha, made[weight_name]))
                else:
                    made[weight_name] = f"{weight_name}_ternary"
                    codes_name, scale_name = f"{weight_name}_ternary_codes", f"{weight_name}_ternary_scale"
                    new_inits += [numpy_helper.from_array(signs, codes_name),
                                  numpy_helper.from_array(alpha, scale_name)]
                    new_nodes.append(helper.make_node("DequantizeLinear", [codes_name, scale_name],
                                                      [made[weight_name]], name=f"{label}_dequantize", axis=0))
            conv = onnx.NodeProto()
            conv.CopyFrom(node)
            conv.input[1] = made[weight_name]
            new_nodes.append(conv)
            uses[weight_name] -= 1
            if uses[weight_name] == 0:
                dropped.add(weight_name)
            storage = CONV_PACKED if conv_storage == "packed" else INT8_CODES
            layers.append(LayerPlan(label, "Conv", storage, int(weight.size), float((signs == 0).mean()),
                                    why="ONNX Runtime has a 2-bit kernel for Linear layers only"))
            continue
        # A MatMul of two activations (attention scores) has no weight to ternarise: not a layer here.
        new_nodes.append(node)

    if not any(layer.storage != "fp32" for layer in layers):
        raise NoTernaryLayersError("ternary does not apply: the model has no Linear (MatMul/Gemm) or convolution "
                              "layer with a constant weight")
    unpack_nodes, unpack_inits = _conv_unpack(to_unpack, helper, numpy_helper)
    del graph.node[:]
    graph.node.extend(unpack_nodes + new_nodes)  # constants only: first keeps the graph in topological order
    kept = [init for init in graph.initializer if init.name not in dropped]
    del graph.initializer[:]
    graph.initializer.extend(kept + new_inits + unpack_inits)
    if not any(op.domain == MS_DOMAIN for op in model.opset_import):
        model.opset_import.append(helper.make_opsetid(MS_DOMAIN, 1))
    _ensure_opset(model, 13)  # DequantizeLinear with a per-channel axis needs opset 13
    dropped_bytes = strip_debug_info(model)
    dest.parent.mkdir(parents=True, exist_ok=True)
    onnx.save(model, str(dest))
    return PackResult(path=dest, layers=tuple(layers), block_size=block_size, debug_bytes_dropped=dropped_bytes)


def strip_debug_info(model: Any) -> int:
    """Drop what the runtime never reads: per-node and per-tensor metadata and doc strings, and value_info.

    PyTorch's torch.export-based exporter annotates every node with its Python stack trace and
    module path (about 1 KB a node) and lists shape annotations (value_info) for every tensor,
    including the fp32 weights this packer removed. ONNX Runtime infers shapes itself. Returns
    the bytes saved, so a size comparison can say how much of it this accounts for.
    """
    before = model.ByteSize()
    graph = model.graph
    for item in [*graph.node, *graph.initializer, *graph.input, *graph.output]:
        del item.metadata_props[:]
        item.ClearField("doc_string")  # ONNX's schema is proto2: assigning "" would store an empty field
    del graph.value_info[:]
    return before - model.ByteSize()


def _linear(node: Any, weight: np.ndarray, label: str, base: str, block_size: int, accuracy_level: int,
            factor: float, helper: Any, numpy_helper: Any) -> tuple[list, list, LayerPlan] | None:
    """MatMulNBits (+ Add for a Gemm bias) replacing one MatMul/Gemm; None when the Gemm is unusual."""
    attrs = {a.name: helper.get_attribute_value(a) for a in node.attribute}
    if node.op_type == "Gemm":
        if attrs.get("transA", 0) or attrs.get("alpha", 1.0) != 1.0 or attrs.get("beta", 1.0) != 1.0:
            return None
        w_nk = weight if attrs.get("transB", 0) else weight.T
    else:
        w_nk = weight.T  # MatMul's constant is [K, N]
    n, k = w_nk.shape
    signs, alpha = ternarize_rows(w_nk, factor)
    packed, scales, _ = pack_2bit(signs, alpha, block_size)
    # Zero points are left out: MatMulNBits' default for 2 bits is 2, the code this packing uses for 0.
    # Short tensor names: every name is stored in the file, and on a small model they show in its size.
    tensors = [numpy_helper.from_array(packed, f"{base}_B"), numpy_helper.from_array(scales, f"{base}_S")]
    has_bias = node.op_type == "Gemm" and len(node.input) > 2 and node.input[2]
    out = f"{node.output[0]}_nobias" if has_bias else node.output[0]
    nodes = [helper.make_node("MatMulNBits", [node.input[0], *(t.name for t in tensors)], [out],
                              name=f"{label}_matmulnbits", domain=MS_DOMAIN, K=k, N=n, bits=2,
                              block_size=block_size, accuracy_level=accuracy_level)]
    if has_bias:
        nodes.append(helper.make_node("Add", [out, node.input[2]], [node.output[0]], name=f"{label}_bias"))
    plan = LayerPlan(label, node.op_type, PACKED, int(w_nk.size), float((signs == 0).mean()),
                     why=f"{k} inputs x {n} outputs, blocks of {block_size}")
    return nodes, tensors, plan


def pack_codes(signs: np.ndarray) -> np.ndarray:
    """Signs {-1, 0, 1} as 2-bit codes (sign + 1), four per byte, the first in the low bits; [bytes, 1] uint8.

    The flat code list is padded to a whole byte with the code for 0.
    """
    codes = (signs.astype(np.int16).reshape(-1) + 1).astype(np.uint8)
    padded = np.full(-(-codes.size // 4) * 4, 1, dtype=np.uint8)
    padded[:codes.size] = codes
    quads = padded.reshape(-1, 4)
    return (quads[:, 0] | (quads[:, 1] << 2) | (quads[:, 2] << 4) | (quads[:, 3] << 6)).astype(np.uint8)[:, None]


def unpack_codes(packed: np.ndarray, alpha: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    """The fp32 weight `pack_codes` + a per-channel scale stand for: numpy's version of the in-graph unpack."""
    codes = (packed.reshape(-1, 1).astype(np.int32) // np.array([1, 4, 16, 64])) % 4
    values = codes.reshape(-1)[:int(np.prod(shape))].astype(np.float32) - 1
    return values.reshape(shape) * alpha.reshape(-1, *([1] * (len(shape) - 1)))


UNPACK_GROUP_WEIGHTS = 1 << 20  # weights per unpack chain (each chain's Split output count stays modest)


def _conv_unpack(convs: list[tuple[str, np.ndarray, np.ndarray, str]], helper: Any, numpy_helper: Any
                 ) -> tuple[list, list]:
    """Nodes and initializers that rebuild the convs' fp32 ternary weights from 2-bit codes.

    Convs are taken in groups of up to UNPACK_GROUP_WEIGHTS weights; each group's codes are one
    uint8 initializer, four per byte. BitShift right by 0/2/4/6 and Mod 4 split the bytes into
    codes, Cast to int8 and Sub 1 give {-1, 0, 1}, Split cuts the flat list into the convs, and
    per conv Reshape, Cast to float and a Mul by its per-channel scale give the weight. Every input
    is a constant, so ONNX Runtime folds all of it once at session creation. The chain stays in
    one-byte integers until each conv's own Cast: ORT keeps the folded intermediates until its
    pass ends, so every fp32 stage would add 4 bytes per weight to the peak memory at load. One
    chain per group (not per conv) keeps the file small.
    """
    if not convs:
        return [], []
    groups: list[list[tuple[str, np.ndarray, np.ndarray, str]]] = [[]]
    for conv in convs:
        if groups[-1] and sum(c[1].size for c in groups[-1]) + conv[1].size > UNPACK_GROUP_WEIGHTS:
            groups.append([])
        groups[-1].append(conv)
    tensors = [numpy_helper.from_array(np.array([[0, 2, 4, 6]], dtype=np.uint8), "t2_shift"),
               numpy_helper.from_array(np.array(4, dtype=np.uint8), "t2_four"),
               numpy_helper.from_array(np.array(1, dtype=np.int8), "t2_one"),
               numpy_helper.from_array(np.array([-1], dtype=np.int64), "t2_flat")]
    nodes = []
    for g, group in enumerate(groups):
        sizes = [int(c[1].size) for c in group]
        codes = pack_codes(np.concatenate([c[1].reshape(-1) for c in group]))
        pad = codes.shape[0] * 4 - sum(sizes)
        base = f"t2g{g}"
        tensors += [numpy_helper.from_array(codes, f"{base}_codes"),
                    numpy_helper.from_array(np.array(sizes + ([pad] if pad else []), dtype=np.int64), f"{base}_sizes")]
        parts = [f"{base}_{i}" for i in range(len(group))] + ([f"{base}_pad"] if pad else [])
        nodes += [helper.make_node("BitShift", [f"{base}_codes", "t2_shift"], [f"{base}_b"], direction="RIGHT"),
                  helper.make_node("Mod", [f"{base}_b", "t2_four"], [f"{base}_m"]),
                  helper.make_node("Reshape", [f"{base}_m", "t2_flat"], [f"{base}_f"]),
                  helper.make_node("Cast", [f"{base}_f"], [f"{base}_c"], to=3),  # 3: INT8
                  helper.make_node("Sub", [f"{base}_c", "t2_one"], [f"{base}_v"]),
                  helper.make_node("Split", [f"{base}_v", f"{base}_sizes"], parts, axis=0)]
        for (weight_name, signs, alpha, out), part in zip(group, parts):
            shape = tuple(int(d) for d in signs.shape)
            tensors += [numpy_helper.from_array(np.array(shape, dtype=np.int64), f"{out}_shape"),
                        numpy_helper.from_array(alpha.reshape(-1, *([1] * (len(shape) - 1))), f"{out}_scale")]
            nodes += [helper.make_node("Reshape", [part, f"{out}_shape"], [f"{out}_r"]),
                      helper.make_node("Cast", [f"{out}_r"], [f"{out}_c"], to=1),  # 1: FLOAT
                      helper.make_node("Mul", [f"{out}_c", f"{out}_scale"], [out],
                                       name=f"{weight_name}_{UNPACK_MARK}")]
    return nodes, tensors


def _ensure_opset(model: Any, minimum: int) -> None:
    for op in model.opset_import:
        if op.domain in ("", "ai.onnx") and op.version < minimum:
            op.version = minimum


FALLBACK_MARK = "Falling back to using unpacked compute mode"


def describe_packed(path: Path) -> list[dict]:
    """Per weighted layer of a packed file, read back from the file: how it is stored and runs."""
    import onnx

    model = onnx.load(str(path), load_external_data=False)
    dequantized = {n.output[0] for n in model.graph.node if n.op_type == "DequantizeLinear"}
    unpacked = {n.output[0] for n in model.graph.node if n.name.endswith(UNPACK_MARK)}
    constants = {init.name for init in model.graph.initializer}
    rows = []
    for node in model.graph.node:
        attrs = {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}
        if node.op_type == "MatMulNBits":
            rows.append({"layer": node.name, "op": "MatMulNBits",
                         "storage": f"{PACKED}, blocks of {attrs.get('block_size')}, "
                                    f"accuracy_level {attrs.get('accuracy_level', 0)}",
                         "weights": int(attrs.get("K", 0)) * int(attrs.get("N", 0))})
        elif node.op_type == "Conv":
            weight = node.input[1] if len(node.input) > 1 else ""
            stored = CONV_PACKED if weight in unpacked else INT8_CODES if weight in dequantized else "fp32"
            rows.append({"layer": node.name, "op": "Conv", "storage": stored})
        elif node.op_type in ("MatMul", "Gemm") and len(node.input) > 1 and node.input[1] in constants:
            rows.append({"layer": node.name, "op": node.op_type, "storage": "fp32"})
    return rows


def capture_ort_log(path: Path, feed: dict, *, threads: int | None = 1) -> str:
    """ONNX Runtime's INFO-level log for opening `path` and running `feed` once.

    ORT writes its log to the process's stderr from C++, so file descriptor 2 is pointed at a
    temporary file for the duration: a Python-level redirect would not see it.
    """
    import os
    import sys
    import tempfile

    import onnxruntime as ort

    opts = ort.SessionOptions()
    opts.log_severity_level = 1  # INFO: the fallback notice is logged at this level only
    if threads:
        opts.intra_op_num_threads = int(threads)
    sys.stderr.flush()
    saved = os.dup(2)
    with tempfile.TemporaryFile(mode="w+b") as log:
        os.dup2(log.fileno(), 2)
        try:
            session = ort.InferenceSession(str(path), opts, providers=["CPUExecutionProvider"])
            session.run(None, feed)
            del session
        finally:
            os.dup2(saved, 2)
            os.close(saved)
        log.seek(0)
        return log.read().decode("utf-8", "replace")


def fallback_reason(log_text: str) -> str | None:
    """Why the 2-bit kernel did not run, from ORT's log; None when it did not fall back."""
    if FALLBACK_MARK not in log_text:
        return None
    return ("ONNX Runtime fell back to dequantising the 2-bit weights to fp32 on every call (its log "
            "says 'falling back to unpacked compute mode': no optimized 2-bit kernel for this CPU and "
            "setting), so this would time an fp32 matmul plus unpacking, not a ternary kernel")


def kernel_problem(*, block_size: int = BLOCK_SIZE, accuracy_level: int = 4) -> str | None:
    """Whether this ONNX Runtime runs MatMulNBits bits=2 correctly and without falling back.

    A small layer is packed, run, and compared with a numpy matmul on the dequantised weight
    (int8 compute quantises the activations, hence the loose tolerance); None means it works.
    """
    import tempfile

    import onnx
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(0)
    k, n = 2 * block_size, 64
    signs, alpha = ternarize_rows(rng.standard_normal((n, k)).astype(np.float32))
    packed, scales, _ = pack_2bit(signs, alpha, block_size)  # no zero points, as pack_onnx writes it
    node = helper.make_node("MatMulNBits", ["A", "B", "S"], ["Y"], domain=MS_DOMAIN, K=k, N=n, bits=2,
                            block_size=block_size, accuracy_level=accuracy_level)
    graph = helper.make_graph([node], "probe", [helper.make_tensor_value_info("A", TensorProto.FLOAT, ["b", k])],
                              [helper.make_tensor_value_info("Y", TensorProto.FLOAT, ["b", n])],
                              [numpy_helper.from_array(packed, "B"), numpy_helper.from_array(scales, "S")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid(MS_DOMAIN, 1)])
    x = rng.standard_normal((4, k)).astype(np.float32)
    expected = x @ unpack_2bit(packed, scales, k).T
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "probe.onnx"
        onnx.save(model, str(path))
        try:
            log = capture_ort_log(path, {"A": x})
            import onnxruntime as ort

            got = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"]).run(None, {"A": x})[0]
        except Exception as exc:  # noqa: BLE001 - any failure means the kernel is unusable here
            return f"this ONNX Runtime cannot run MatMulNBits with 2-bit weights ({type(exc).__name__}: {exc})"
    reason = fallback_reason(log)
    if reason:
        return reason
    error = float(np.abs(got - expected).max() / max(float(np.abs(expected).max()), 1e-6))
    if error > 0.05:
        return (f"this ONNX Runtime's 2-bit MatMulNBits gives wrong results (largest error {error:.1%} of the "
                "output range against a numpy matmul on the same weights)")
    return None

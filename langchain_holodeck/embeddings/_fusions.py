"""Fused operators for the int8 graph: one ``Attention`` per layer, one ``BiasGelu`` per FFN.

The model's export spells each self-attention block out as ~40 nodes (three projections, the
head reshapes and transposes, two batched products, the softmax) and each GELU as five. After
dynamic quantization every projection quantizes its input again, and the attention products
run in fp32 through generic kernels. ``fused_graph`` rewrites an fp32 graph before it is
quantized:

- ``fuse_gelu``: onnxruntime's own transformer fusions (``FusionGelu``, ``FusionBiasGelu``)
  turn ``x * 0.5 * (1 + erf(x / sqrt 2))`` after a bias into one ``BiasGelu``;
- ``fuse_attention``: each BERT self-attention block becomes one ``com.microsoft`` ``Attention``
  node over the packed query/key/value weights, which ``quantize_dynamic`` then makes a
  ``QAttention`` (one input quantization and one int8 product for the three projections).

The fused graph is checked against the unfused one on a probe window before it is used
(``fused_graph``): a graph whose attention the rewrite reads differently (another scale, a
mask the fused node does not apply) keeps its unfused form. The ``Attention`` nodes take no
mask: ``OnnxEmbeddings`` runs int8 one window per run, never padded, so every token attends
to every other (``onnx.OnnxEmbeddings._forward_each``).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    import onnx

logger = logging.getLogger(__name__)

MS_DOMAIN = "com.microsoft"
PROBE_TOLERANCE = 1e-3
"""Largest |difference| of the probe's token states allowed between fused and unfused fp32
graphs (fused kernels reorder fp32 sums: ~1e-6 here)."""
_PROBE_IDS = (101, *range(2000, 2030), 102)
"""The probe window: ``[CLS]``, 30 word pieces, ``[SEP]`` (any ids of the vocabulary do)."""
_SELF = "attention.self."


def fuse_gelu(graph: onnx.ModelProto) -> int:
    """Fuse each GELU after a bias into ``BiasGelu`` (onnxruntime's fusions); return how many."""
    from onnxruntime.transformers.fusion_biasgelu import FusionBiasGelu
    from onnxruntime.transformers.fusion_gelu import FusionGelu
    from onnxruntime.transformers.onnx_model import OnnxModel

    model = OnnxModel(graph)  # edits ``graph`` in place
    FusionGelu(model).apply()
    FusionBiasGelu(model, is_fastgelu=False).apply()
    model.prune_graph()
    return sum(node.op_type == "BiasGelu" for node in graph.graph.node)


def fuse_attention(graph: onnx.ModelProto) -> int:
    """Replace each BERT self-attention block by one ``Attention`` node; return how many.

    A block is found by its parameters' names (``<layer>.attention.self.{query,key,value}.bias``
    and ``<layer>.attention.output.dense.bias``, as Hugging Face BERT exports name them): each
    bias is added to a ``MatMul`` of the same input by a weight matrix, the query is reshaped
    to heads of a constant size, and the output projection reads the block's result. The new
    node reads the block's input and the three projections packed side by side; the nodes the
    block no longer needs are removed. A block that does not match is left as it is.
    """
    from onnx import helper, numpy_helper

    nodes = graph.graph.node
    initializers = {init.name: init for init in graph.graph.initializer}
    producer = {name: node for node in nodes for name in node.output}
    readers: dict[str, list[onnx.NodeProto]] = {}
    for node in nodes:
        for name in node.input:
            readers.setdefault(name, []).append(node)

    def projection(bias: str) -> tuple[str, np.ndarray, np.ndarray, str] | None:
        """``(input, weight, bias, output)`` of ``MatMul(input, weight) + bias``."""
        adds = [n for n in readers.get(bias, []) if n.op_type == "Add"]
        if len(adds) != 1 or bias not in initializers:
            return None
        other = next((i for i in adds[0].input if i != bias), "")
        matmul = producer.get(other)
        if matmul is None or matmul.op_type != "MatMul" or matmul.input[1] not in initializers:
            return None
        weight = numpy_helper.to_array(initializers[matmul.input[1]])
        if weight.ndim != 2:
            return None
        vector = numpy_helper.to_array(initializers[bias])
        return matmul.input[0], weight, vector, adds[0].output[0]

    def head_size(query: str) -> int | None:
        """The constant last dimension the projected query is reshaped to (its heads' size)."""
        for reshape in readers.get(query, []):
            shape = producer.get(reshape.input[1]) if reshape.op_type == "Reshape" else None
            if shape is not None and shape.op_type == "Concat" and shape.input[-1] in initializers:
                size = numpy_helper.to_array(initializers[shape.input[-1]]).reshape(-1)
                if size.shape == (1,) and int(size[0]) > 0:
                    return int(size[0])
        return None

    fused: list[onnx.NodeProto] = []
    for name in sorted(initializers):
        if not name.endswith(_SELF + "query.bias"):
            continue
        prefix = name[: -len("self.query.bias")]
        parts = [projection(f"{prefix}self.{p}.bias") for p in ("query", "key", "value")]
        out_bias = f"{prefix}output.dense.bias"
        out_adds = [n for n in readers.get(out_bias, []) if n.op_type == "Add"]
        if any(p is None for p in parts) or len(out_adds) != 1:
            continue
        (source, wq, bq, q_out), (k_in, wk, bk, _), (v_in, wv, bv, _) = parts  # type: ignore[misc]
        size = head_size(q_out)
        out_matmul = producer.get(next((i for i in out_adds[0].input if i != out_bias), ""))
        if (
            source != k_in
            or source != v_in
            or not wq.shape == wk.shape == wv.shape
            or size is None
            or wq.shape[1] % size
            or out_matmul is None
            or out_matmul.op_type != "MatMul"
        ):
            continue
        layer = len(fused)
        weights, biases = f"packed_qkv_weight_{layer}", f"packed_qkv_bias_{layer}"
        graph.graph.initializer.extend(
            [
                numpy_helper.from_array(np.concatenate([wq, wk, wv], axis=1), weights),
                numpy_helper.from_array(np.concatenate([bq, bk, bv]), biases),
            ]
        )
        output = f"{out_matmul.input[0]}_fused_attention"
        fused.append(
            helper.make_node(
                "Attention",
                [source, weights, biases],
                [output],
                name=f"Attention_{layer}",
                domain=MS_DOMAIN,
                num_heads=wq.shape[1] // size,
            )
        )
        out_matmul.input[0] = output
    if not fused:
        return 0
    nodes.extend(fused)
    if not any(opset.domain == MS_DOMAIN for opset in graph.opset_import):
        graph.opset_import.append(helper.make_opsetid(MS_DOMAIN, 1))
    _prune(graph)
    return len(fused)


def _prune(graph: onnx.ModelProto) -> None:
    """Order the nodes topologically, then drop those (and initializers) no output needs."""
    body = graph.graph
    ready = {i.name for i in body.input} | {i.name for i in body.initializer} | {""}
    ordered: list[onnx.NodeProto] = []
    pending = list(body.node)
    while pending:
        waiting = []
        for node in pending:
            if ready.issuperset(node.input):
                ordered.append(node)
                ready.update(node.output)
            else:
                waiting.append(node)
        if len(waiting) == len(pending):
            msg = f"the graph has a cycle or an unknown input: node {waiting[0].name!r}"
            raise ValueError(msg)
        pending = waiting
    needed = {output.name for output in body.output}
    kept: list[onnx.NodeProto] = []
    for node in reversed(ordered):
        if needed.intersection(node.output):
            kept.append(node)
            needed.update(node.input)
    kept.reverse()
    del body.node[:]
    body.node.extend(kept)
    used = [init for init in body.initializer if init.name in needed]
    del body.initializer[:]
    body.initializer.extend(used)


def fused_graph(graph: onnx.ModelProto) -> tuple[onnx.ModelProto, Sequence[str]]:
    """``graph`` with fused GELUs and attention, if it computes what ``graph`` does.

    Returns the graph to quantize and the fusions applied (e.g. ``["BiasGelu x6",
    "Attention x6"]``). The fused copy runs one probe window beside the original; if any
    token state differs by more than ``PROBE_TOLERANCE``, or the fusions fail, ``graph``
    itself is returned with no fusion, and a WARNING says why.
    """
    import onnx

    fused = onnx.ModelProto()
    fused.CopyFrom(graph)
    try:
        gelus = fuse_gelu(fused)
    except ImportError as e:  # an onnxruntime without these transformer tools: attention only
        logger.info("OnnxEmbeddings: GELU left unfused (%s)", e)
        gelus = 0
    try:
        applied = [f"BiasGelu x{gelus}", f"Attention x{fuse_attention(fused)}"]
        difference = _probe_difference(graph, fused)
    except Exception as e:  # an export the fusions do not know: keep the graph as it is
        logger.warning("OnnxEmbeddings: int8 graph left unfused (%s: %s)", type(e).__name__, e)
        return graph, []
    if not difference <= PROBE_TOLERANCE:
        logger.warning(
            "OnnxEmbeddings: int8 graph left unfused: the fused graph's token states differ "
            "by %.3g on a probe window (more than %g)",
            difference,
            PROBE_TOLERANCE,
        )
        return graph, []
    return fused, [a for a in applied if not a.endswith(" x0")]


def _probe_difference(graph: onnx.ModelProto, fused: onnx.ModelProto) -> float:
    """Largest |difference| of the two graphs' first outputs on the probe window."""
    import onnxruntime

    ids = np.array([_PROBE_IDS], dtype=np.int64)
    names = {i.name for i in graph.graph.input}
    feed = {
        name: value
        for name, value in (
            ("input_ids", ids),
            ("attention_mask", np.ones_like(ids)),
            ("token_type_ids", np.zeros_like(ids)),
        )
        if name in names
    }
    options = onnxruntime.SessionOptions()
    options.log_severity_level = 3
    outputs = [
        onnxruntime.InferenceSession(
            g.SerializeToString(), options, providers=["CPUExecutionProvider"]
        ).run(None, feed)[0]
        for g in (graph, fused)
    ]
    return float(np.abs(outputs[0] - outputs[1]).max())

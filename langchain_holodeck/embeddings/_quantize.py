"""Dynamic int8 quantization of the fused graph, its weights quantized with whole-array numpy.

``quantize_int8`` writes what onnxruntime's ``quantize_dynamic(graph,
weight_type=QuantType.QInt8, per_channel=True)`` writes for the operators of the fused MiniLM
graph, and the same numbers: bit for bit the same initializers and vectors as the installed
onnxruntime's quantizer (``tests/unit_tests/test_embedding_runtime.py``; checked on 1.20.1,
1.24.4, 1.28.0, 1.30.0, 1.31.1 and 1.32.0). onnxruntime's quantizer computes each output
channel's scale in a Python loop (20,739 channels here): 1.7 of the ~2.4 s it takes, which the
very first run on a machine pays before embedding anything. Here each weight is one array
operation.

- ``MatMul`` by a constant ``[K, N]`` weight: the weight becomes int8, symmetric, one scale per
  output column; the activation is quantized per run (``DynamicQuantizeLinear``, once per
  tensor however many read it) and multiplied in integers (``MatMulInteger``), then scaled
  back (``Cast``, ``Mul`` by the product of the two scales).
- ``Attention`` (``com.microsoft``) by a constant packed weight: ``QAttention``, the weight as
  above.
- ``Gather`` from a constant table (the embeddings): the table becomes uint8, one asymmetric
  scale for the whole table, and the rows gathered are dequantized (``DequantizeLinear``).

Any other operator onnxruntime's quantizer would quantize (``_QUANTIZED_ELSEWHERE``), a
``MatMul`` of two activations (the unfused attention), or a tensor both multiplied and
gathered raises ``Unsupported``: the caller then uses onnxruntime's own quantizer.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import partial
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    import onnx

__all__ = ["Unsupported", "quantize_int8"]

_MICROSOFT = "com.microsoft"
Quantized = tuple[np.ndarray, np.ndarray, np.ndarray]
"""A tensor's quantized values, scale and zero point."""
Names = tuple[str, str, str]
"""Their names in the graph: ``<name>_quantized``, ``<name>_scale``, ``<name>_zero_point``."""


def _names(name: str) -> Names:
    return name + "_quantized", name + "_scale", name + "_zero_point"


class Unsupported(ValueError):
    """The graph holds an operator this quantizer does not write as onnxruntime would."""


def _symmetric_int8_per_column(weight: np.ndarray) -> Quantized:
    """``(quantized int8, scale float32 [N], zero point int8 [N])`` of a ``[K, N]`` weight.

    onnxruntime's per-channel ``QInt8`` weights: the range of each column widened to hold 0,
    made symmetric, divided into 254 steps (in float64, stored as float32), zero point 0,
    values rounded half to even and clipped to [-128, 127].
    """
    rmin = np.minimum(weight.min(axis=0), np.float32(0))
    rmax = np.maximum(weight.max(axis=0), np.float32(0))
    absmax = np.maximum(np.abs(rmin), np.abs(rmax))
    scale64 = (absmax.astype(np.float64) - (-absmax).astype(np.float64)) / np.float64(254)
    scale = np.where(scale64 < np.finfo(np.float32).tiny, 1.0, scale64).astype(np.float32)
    quantized = np.clip((weight.astype(np.float32) / scale).round(), -128, 127)
    return quantized.astype(np.int8), scale, np.zeros(scale.shape, dtype=np.int8)


def _asymmetric_uint8(table: np.ndarray, *, float32_range: bool) -> Quantized:
    """``(quantized uint8, scale float32 [], zero point uint8 [])`` of a whole table.

    onnxruntime's ``Gather`` tables: one range for the table, widened to hold 0, divided into
    255 steps (in float64, stored as float32); the zero point from the float64 scale. The range
    ``max - min`` is subtracted in float64, or, with ``float32_range``, in float32 then widened:
    onnxruntime before 1.31 does so, and its scale can be one unit in the last place apart,
    which moves the vectors (dynamic quantization rounds every activation by its run's range).
    """
    rmin = np.minimum(table.min(), np.float32(0))
    rmax = np.maximum(table.max(), np.float32(0))
    span = np.float64(rmax - rmin) if float32_range else np.float64(rmax) - np.float64(rmin)
    scale64 = np.array(span / np.float64(255))
    scale: np.ndarray
    if scale64 < np.finfo(np.float32).tiny:
        scale, zero_point = np.array(1.0, dtype=np.float32), np.array(0, dtype=np.uint8)
    else:
        zero_point = np.array(np.round(np.uint8(0) - rmin / scale64), dtype=np.uint8)
        scale = scale64.astype(np.float32)
    quantized = np.clip((table.astype(np.float32) / scale).round() + zero_point, 0, 255)
    return quantized.astype(np.uint8), scale, zero_point


def onnxruntime_subtracts_in_float32() -> bool:
    """Whether the installed onnxruntime's quantizer takes a range's width in float32 (< 1.31)."""
    import onnxruntime

    release = tuple(int(part) for part in re.findall(r"\d+", onnxruntime.__version__)[:2])
    return release < (1, 31)


def quantize_int8(graph: onnx.ModelProto, *, float32_range: bool | None = None) -> onnx.ModelProto:
    """A copy of ``graph`` quantized as ``quantize_dynamic(..., QInt8, per_channel=True)`` does.

    ``float32_range``: round a table's range as onnxruntime before 1.31 does (default: as the
    installed onnxruntime does, ``onnxruntime_subtracts_in_float32``).

    Raises:
        Unsupported: When an operator onnxruntime's quantizer would quantize is not one of
            those above (the caller falls back to ``quantize_dynamic``).
    """
    import onnx
    from onnx import helper, numpy_helper

    if float32_range is None:
        float32_range = onnxruntime_subtracts_in_float32()
    model = onnx.ModelProto()
    model.CopyFrom(graph)
    body = model.graph
    initializers = {init.name: init for init in body.initializer}
    added: list[onnx.TensorProto] = []
    weights: set[str] = set()  # float weights replaced by their quantized forms
    tables: set[str] = set()  # float tables likewise
    dynamic: set[str] = set()  # activations already quantized per run
    nodes: list[onnx.NodeProto] = []

    def weight(name: str) -> np.ndarray | None:
        init = initializers.get(name)
        return None if init is None else numpy_helper.to_array(init)

    def replace(
        name: str, data: np.ndarray, kind: set[str], quantize: Callable[[np.ndarray], Quantized]
    ) -> Names:
        """``name``'s quantized tensors, written once however many nodes read it."""
        names = _names(name)
        if name in (weights | tables) - kind:
            msg = f"{name!r} is both a weight and a gathered table"
            raise Unsupported(msg)
        if name not in kind:
            added.extend(map(numpy_helper.from_array, quantize(data), names))
            kind.add(name)
        return names

    def per_column(name: str) -> Names:
        data = weight(name)
        if data is None or data.ndim != 2 or data.dtype != np.float32:
            msg = f"weight {name!r} is not a constant float32 matrix"
            raise Unsupported(msg)
        return replace(name, data, weights, _symmetric_int8_per_column)

    def activation(name: str) -> Names:
        outputs = _names(name)
        if name not in dynamic:
            dynamic.add(name)
            nodes.append(
                helper.make_node(
                    "DynamicQuantizeLinear", [name], list(outputs), name + "_QuantizeLinear"
                )
            )
        return outputs

    for node in body.node:
        if node.op_type == "MatMul" and node.domain in ("", "ai.onnx"):
            if node.input[1] not in initializers:
                msg = f"MatMul {node.name!r} multiplies two activations"
                raise Unsupported(msg)
            q_w, s_w, z_w = per_column(node.input[1])
            q_a, s_a, z_a = activation(node.input[0])
            out = node.output[0]
            nodes += [
                helper.make_node("Mul", [s_a, s_w], [f"{node.name}_quant_scales_mul:0"]),
                helper.make_node(
                    "MatMulInteger", [q_a, q_w, z_a, z_w], [out + "_output_quantized"], node.name
                ),
                helper.make_node(
                    "Cast",
                    [out + "_output_quantized"],
                    [out + "_output_quantized_cast_output"],
                    to=onnx.TensorProto.FLOAT,
                ),
                helper.make_node(
                    "Mul",
                    [out + "_output_quantized_cast_output", f"{node.name}_quant_scales_mul:0"],
                    [out],
                ),
            ]
        elif node.op_type == "Attention" and node.domain == _MICROSOFT:
            if len(node.input) > 3 and any(node.input[3:]):
                msg = f"Attention {node.name!r} takes a mask or a past state"
                raise Unsupported(msg)
            q_w, s_w, z_w = per_column(node.input[1])
            q_a, s_a, z_a = activation(node.input[0])
            inputs = [q_a, q_w, node.input[2], s_a, s_w, "", z_a, z_w]
            quantized = helper.make_node(
                "QAttention", inputs, list(node.output), node.name + "_quant", domain=_MICROSOFT
            )
            quantized.attribute.extend(node.attribute)
            nodes.append(quantized)
        elif node.op_type == "Gather" and node.domain in ("", "ai.onnx"):
            table = weight(node.input[0])
            if table is None or table.dtype != np.float32:  # e.g. shapes: left as they are
                nodes.append(node)
                continue
            q_t, s_t, z_t = replace(
                node.input[0],
                table,
                tables,
                partial(_asymmetric_uint8, float32_range=float32_range),
            )
            out = node.output[0]
            gathered = helper.make_node(
                "Gather", [q_t, node.input[1]], [out + "_quantized"], node.name
            )
            gathered.attribute.extend(node.attribute)
            nodes += [
                gathered,
                helper.make_node(
                    "DequantizeLinear",
                    [out + "_quantized", s_t, z_t],
                    [out],
                    out + "_DequantizeLinear",
                ),
            ]
        elif node.op_type in _QUANTIZED_ELSEWHERE:
            msg = f"{node.op_type} {node.name!r} is not written here"
            raise Unsupported(msg)
        else:
            nodes.append(node)
    still_read = {name for node in nodes for name in node.input}
    dropped = weights | tables
    kept = [i for i in body.initializer if i.name not in dropped or i.name in still_read]
    del body.initializer[:]
    body.initializer.extend([*kept, *added])
    del body.node[:]
    body.node.extend(nodes)
    if not any(o.domain == _MICROSOFT for o in model.opset_import):
        model.opset_import.append(helper.make_opsetid(_MICROSOFT, 1))
    return model


_QUANTIZED_ELSEWHERE = frozenset(
    {"Conv", "Gemm", "LSTM", "Transpose", "EmbedLayerNormalization", "Attention", "MatMul"}
)
"""Operators ``quantize_dynamic`` would quantize that ``quantize_int8`` does not write (a
``MatMul``/``Attention`` outside the default domain ends here too)."""

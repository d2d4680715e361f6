"""The int8 runtime of OnnxEmbeddings: CPU detection, physical cores, the cached int8 graph."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path

import numpy as np
import onnx
import pytest

from langchain_holodeck.embeddings import OnnxEmbeddings
from langchain_holodeck.embeddings._fusions import fuse_attention, fused_graph
from langchain_holodeck.embeddings._quantize import Unsupported, quantize_int8
from langchain_holodeck.embeddings.runtime import (
    INT8_RECIPE,
    build_int8_graph,
    cpu_flags,
    cpu_has_int8_dot,
    default_cache_dir,
    drop_nan_guards,
    file_digest,
    folded_graph,
    int8_model,
    int8_pays,
    open_session,
    physical_cores,
)

REFERENCE = Path(__file__).resolve().parents[1] / "data" / "minilm_reference"


def test_int8_dot_products_are_read_from_the_cpu_flags(tmp_path: Path) -> None:
    assert cpu_has_int8_dot(["sse2", "avx512f", "avx512_vnni"])
    assert cpu_has_int8_dot(["fp", "asimd", "asimddp"])  # Arm dot-product
    assert cpu_has_int8_dot(["amx_int8"])
    assert not cpu_has_int8_dot(["sse2", "avx2", "fma"])
    # int8 also pays with AVX2 alone (byte pairs multiplied, vpmaddubsw); not with SSE only
    assert int8_pays(["sse2", "avx2", "fma"])
    assert int8_pays(["fp", "asimd", "asimddp"])
    assert not int8_pays(["sse2", "sse4_2"])
    assert not int8_pays(["fp", "asimd"])  # Arm without dot-product
    cpuinfo = tmp_path / "cpuinfo"
    cpuinfo.write_text("processor\t: 0\nflags\t\t: fpu sse2 avx2 avx_vnni\n\n", encoding="utf-8")
    assert cpu_flags(cpuinfo) == {"fpu", "sse2", "avx2", "avx_vnni"}
    assert cpu_flags(tmp_path / "missing") == frozenset()


def _topology(root: Path, cpu: int, package: int, core: int) -> None:
    topology = root / f"cpu{cpu}" / "topology"
    topology.mkdir(parents=True)
    (topology / "physical_package_id").write_text(f"{package}\n")
    (topology / "core_id").write_text(f"{core}\n")


@pytest.mark.skipif(not hasattr(os, "sched_getaffinity"), reason="Linux affinity")
def test_physical_cores_count_hyperthreads_once(tmp_path: Path) -> None:
    allowed = sorted(os.sched_getaffinity(0))
    for cpu in allowed:  # every two logical CPUs share a core
        _topology(tmp_path, cpu, package=0, core=cpu // 2)
    assert physical_cores(tmp_path) == len({cpu // 2 for cpu in allowed})
    assert physical_cores(tmp_path / "no-sysfs") == len(allowed)  # unreadable: logical CPUs


def test_the_cache_dir_follows_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("HOLODECK_CACHE_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert default_cache_dir() == tmp_path / "xdg" / "langchain-holodeck"
    monkeypatch.setenv("HOLODECK_CACHE_DIR", str(tmp_path / "mine"))
    assert default_cache_dir() == tmp_path / "mine"


def test_the_int8_graph_is_built_once_and_keyed_by_model_and_runtime(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    import onnxruntime

    weights = OnnxEmbeddings()._weights()
    with caplog.at_level(logging.WARNING):
        built = int8_model(weights, cache_dir=tmp_path)
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING] == []
    assert built.parent == tmp_path / "onnx"
    assert file_digest(weights)[:24] in built.name  # other model bytes, other graph
    assert f"ort{onnxruntime.__version__}" in built.name
    assert INT8_RECIPE in built.name
    assert [p.name for p in built.parent.iterdir()] == [built.name]  # no temporary left
    assert built.stat().st_size < weights.stat().st_size * 1.5  # int8 weights, not fp32
    stamp = built.stat().st_mtime_ns
    assert int8_model(weights, cache_dir=tmp_path) == built
    assert built.stat().st_mtime_ns == stamp  # read from the cache, not rebuilt
    emb = OnnxEmbeddings(precision="int8", cache_dir=tmp_path)
    vector = np.asarray(emb.embed_query("holodeck safety protocols"))
    assert vector.shape == (384,)
    assert [p.name for p in built.parent.iterdir()] == [built.name]


def test_a_cached_int8_graph_loads_without_importing_the_quantizer(tmp_path: Path) -> None:
    weights = OnnxEmbeddings()._weights()
    built = int8_model(weights, cache_dir=tmp_path)
    code = (
        "import sys; from pathlib import Path\n"
        "from langchain_holodeck.embeddings.runtime import int8_model\n"
        f"path = int8_model(Path({str(weights)!r}), cache_dir=Path({str(tmp_path)!r}))\n"
        "print(path); print('onnxruntime.quantization' in sys.modules, 'onnx' in sys.modules)\n"
    )
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True
    )
    assert done.stdout.split() == [str(built), "False", "False"]


def _ops(graph: Path) -> Counter[str]:
    return Counter(node.op_type for node in onnx.load(graph).graph.node)


def _texts() -> list[str]:
    texts = json.loads((REFERENCE / "texts.json").read_text(encoding="utf-8"))[:40]
    texts.append(" ".join(f"Paragraph {n}: power to deck {n}." for n in range(80)))
    return texts


def test_the_int8_graph_has_no_nan_guards_and_the_same_vectors_as_with_them(
    tmp_path: Path,
) -> None:
    weights = OnnxEmbeddings()._weights()
    name = int8_model(weights).name
    # recipes v1 (guards kept) and v2 (guards dropped), both unfused, planted under today's name
    v1, v2 = tmp_path / "v1", tmp_path / "v2"
    build_int8_graph(weights, v1 / "onnx" / name, nan_guards=True, fuse=False)
    build_int8_graph(weights, v2 / "onnx" / name, fuse=False)
    ops = _ops(v1 / "onnx" / name)
    assert (ops["Softmax"], ops["IsNaN"], ops["Where"]) == (6, 6, 7)
    ops = _ops(v2 / "onnx" / name)
    assert (ops["Softmax"], ops["IsNaN"], ops["Where"]) == (6, 0, 1)  # the mask's Where stays
    guarded = OnnxEmbeddings(precision="int8", cache_dir=v1)
    unguarded = OnnxEmbeddings(precision="int8", cache_dir=v2)
    texts = _texts()
    for window in (128, 256):
        ours = np.vstack(unguarded.embed_windows(texts, window=window))
        theirs = np.vstack(guarded.embed_windows(texts, window=window))
        assert len(ours) > len(texts)  # the long text has several windows
        np.testing.assert_array_equal(ours, theirs)  # bit for bit


def test_the_int8_graph_fuses_attention_and_gelu_at_the_same_agreement_with_fp32(
    tmp_path: Path,
) -> None:
    weights = OnnxEmbeddings()._weights()
    # the user's cache: a graph left there by the recipe before (unfused) is not read
    ops = _ops(int8_model(weights))
    assert (ops["QAttention"], ops["BiasGelu"]) == (6, 6)
    assert (ops["Softmax"], ops["Transpose"], ops["Erf"], ops["IsNaN"]) == (0, 0, 0, 0)
    v2 = tmp_path / "onnx" / int8_model(weights).name
    build_int8_graph(weights, v2, fuse=False)
    fused = OnnxEmbeddings(precision="int8")
    unfused = OnnxEmbeddings(precision="int8", cache_dir=tmp_path)
    fp32 = OnnxEmbeddings(precision="fp32")
    texts = _texts()
    for window in (128, 256):
        reference = np.vstack(fp32.embed_windows(texts, window=window))
        ours = np.vstack(fused.embed_windows(texts, window=window))
        before = np.vstack(unfused.embed_windows(texts, window=window))
        assert not np.array_equal(ours, before)  # another graph ran
        assert (ours * before).sum(axis=1).min() > 0.99
        to_fp32, before_to_fp32 = (reference * ours).sum(axis=1), (reference * before).sum(axis=1)
        assert to_fp32.min() > 0.98
        assert abs(to_fp32.mean() - before_to_fp32.mean()) < 0.001


@pytest.fixture(scope="module")
def _unguarded() -> onnx.ModelProto:
    graph = folded_graph(OnnxEmbeddings()._weights())
    drop_nan_guards(graph)
    return graph


@pytest.fixture
def graph(_unguarded: onnx.ModelProto) -> onnx.ModelProto:
    """The model's fp32 graph as the int8 build fuses it (folded, no NaN guards): a copy."""
    copy = onnx.ModelProto()
    copy.CopyFrom(_unguarded)
    return copy


def test_fused_attention_computes_what_the_blocks_did(graph: onnx.ModelProto) -> None:
    fused, applied = fused_graph(graph)
    assert applied == ["BiasGelu x6", "Attention x6"]
    assert Counter(n.op_type for n in graph.graph.node)["Attention"] == 0  # a copy was fused
    ops = Counter(n.op_type for n in fused.graph.node)
    assert (ops["Attention"], ops["Softmax"], ops["MatMul"]) == (6, 0, 6 * 3)  # out + 2 FFN
    states = [_last_hidden_state(g, 40) for g in (graph, fused)]
    assert np.abs(states[0] - states[1]).max() < 1e-4


def test_attention_is_fused_where_onnxruntime_lacks_its_gelu_fusions(
    graph: onnx.ModelProto, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "onnxruntime.transformers.fusion_gelu", None)  # no module
    fused, applied = fused_graph(graph)
    assert applied == ["Attention x6"]
    ops = Counter(n.op_type for n in fused.graph.node)
    assert (ops["Attention"], ops["BiasGelu"], ops["Erf"]) == (6, 0, 6)


def test_a_graph_the_fusion_reads_differently_is_left_unfused(
    graph: onnx.ModelProto, caplog: pytest.LogCaptureFixture
) -> None:
    from onnx import numpy_helper

    # the attention scale, halved: the fused node keeps 1/sqrt(head size), the blocks would not
    scales = [node for node in graph.graph.node if node.op_type == "Mul"]
    names = {i.name for i in graph.graph.initializer}
    scale = next(
        init
        for init in graph.graph.initializer
        if init.name in {name for node in scales for name in node.input if name in names}
        and numpy_helper.to_array(init).size == 1
        and abs(float(numpy_helper.to_array(init)) - 32**-0.25) < 1e-6
    )
    halved = (numpy_helper.to_array(scale) * 0.5).astype(np.float32)  # float32 on numpy 1 too
    scale.CopyFrom(numpy_helper.from_array(halved, scale.name))
    with caplog.at_level(logging.WARNING):
        kept, applied = fused_graph(graph)
    assert kept is graph
    assert applied == []
    assert "int8 graph left unfused" in caplog.text
    assert "differ by" in caplog.text


def test_a_graph_without_attention_blocks_is_not_rewritten() -> None:
    from onnx import TensorProto, helper

    tensor = helper.make_tensor_value_info
    graph = helper.make_model(
        helper.make_graph(
            [helper.make_node("Relu", ["x"], ["y"])],
            "plain",
            [tensor("x", TensorProto.FLOAT, [2, 3])],
            [tensor("y", TensorProto.FLOAT, [2, 3])],
        )
    )
    before = graph.SerializeToString()
    assert fuse_attention(graph) == 0
    assert graph.SerializeToString() == before
    onnx.checker.check_model(graph)


def test_the_fused_graph_is_quantized_as_onnxruntime_quantizes_it(
    graph: onnx.ModelProto, tmp_path: Path
) -> None:
    """``quantize_int8`` writes ``quantize_dynamic``'s initializers and vectors, bit for bit."""
    from onnx import numpy_helper
    from onnxruntime.quantization import QuantType, quantize_dynamic
    from onnxruntime.quantization.quant_utils import add_pre_process_metadata

    fused, _ = fused_graph(graph)
    ours = quantize_int8(fused)
    add_pre_process_metadata(fused)
    quantize_dynamic(fused, tmp_path / "q.onnx", weight_type=QuantType.QInt8, per_channel=True)
    theirs = onnx.load(tmp_path / "q.onnx")
    arrays = [
        {i.name: numpy_helper.to_array(i) for i in g.graph.initializer} for g in (ours, theirs)
    ]
    assert arrays[0].keys() == arrays[1].keys()
    for name, array in arrays[0].items():
        assert array.dtype == arrays[1][name].dtype, name
        assert np.array_equal(array, arrays[1][name]), name
    ops = [Counter(n.op_type for n in g.graph.node) for g in (ours, theirs)]
    assert ops[0] == ops[1]
    assert (ops[0]["QAttention"], ops[0]["MatMulInteger"], ops[0]["DequantizeLinear"]) == (6, 18, 3)
    for length in (7, 126):
        assert np.array_equal(_last_hidden_state(ours, length), _last_hidden_state(theirs, length))


def test_shared_weights_and_tables_are_quantized_once_as_onnxruntime_does(
    tmp_path: Path,
) -> None:
    """A weight two products read, a table two lookups read: one quantized copy each."""
    import onnxruntime
    from onnx import TensorProto, helper, numpy_helper
    from onnxruntime.quantization import QuantType, quantize_dynamic

    rng = np.random.default_rng(7)
    weight = rng.normal(size=(8, 8)).astype(np.float32)
    table = rng.normal(size=(10, 8)).astype(np.float32)
    tensor = helper.make_tensor_value_info
    model = helper.make_model(
        helper.make_graph(
            [
                helper.make_node("Gather", ["table", "ids"], ["rows"], "lookup"),
                helper.make_node("Gather", ["table", "other_ids"], ["more"], "lookup_again"),
                helper.make_node("Add", ["rows", "more"], ["both"], "add"),
                helper.make_node("MatMul", ["both", "w"], ["hidden"], "first"),
                helper.make_node("MatMul", ["hidden", "w"], ["out"], "second"),
            ],
            "shared",
            [
                tensor("ids", TensorProto.INT64, [1, 4]),
                tensor("other_ids", TensorProto.INT64, [1, 4]),
            ],
            [tensor("out", TensorProto.FLOAT, [1, 4, 8])],
            [numpy_helper.from_array(weight, "w"), numpy_helper.from_array(table, "table")],
        ),
        opset_imports=[helper.make_opsetid("", 17)],
        ir_version=10,  # the model's: onnxruntime before 1.32 reads IR 13 at most
    )
    ours = quantize_int8(model)
    onnx.checker.check_model(ours)
    quantized = [f"{name}_{part}" for name in ("w", "table") for part in ("quantized", "scale")]
    zero_points = ["w_zero_point", "table_zero_point"]
    assert Counter(i.name for i in ours.graph.initializer) == Counter(quantized + zero_points)
    onnx.save(model, tmp_path / "f.onnx")
    quantize_dynamic(
        tmp_path / "f.onnx", tmp_path / "q.onnx", weight_type=QuantType.QInt8, per_channel=True
    )
    feed = {"ids": np.array([[1, 2, 3, 9]]), "other_ids": np.array([[0, 0, 5, 7]])}
    outputs = [
        onnxruntime.InferenceSession(g, providers=["CPUExecutionProvider"]).run(None, feed)[0]
        for g in (ours.SerializeToString(), str(tmp_path / "q.onnx"))
    ]
    assert np.array_equal(outputs[0], outputs[1])


def test_a_tables_range_is_rounded_as_the_installed_onnxruntime_rounds_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Before 1.31, onnxruntime takes ``max - min`` in float32, then widens it: the scale can
    be one unit in the last place apart, and with it the vectors (on 1.20.1, before this was
    followed: cosine down to 0.994 against quantize_dynamic's graph, 40 random windows)."""
    import onnxruntime

    from langchain_holodeck.embeddings._quantize import (
        _asymmetric_uint8,
        onnxruntime_subtracts_in_float32,
    )

    table = np.array([[-2.2508543, 0.5], [1.0557429, 0.0]], dtype=np.float32)
    low, high = table.min(), table.max()
    widened = np.float64(high) - np.float64(low)  # onnxruntime >= 1.31
    narrow = np.float64(high - low)  # onnxruntime < 1.31: float32, then float64
    assert widened != narrow
    for float32_range, span in ((False, widened), (True, narrow)):
        _, scale, zero_point = _asymmetric_uint8(table, float32_range=float32_range)
        assert scale == np.float32(span / 255)
        assert zero_point == np.round(-low / (span / 255))
    assert (
        _asymmetric_uint8(table, float32_range=True)[1]
        != _asymmetric_uint8(table, float32_range=False)[1]
    )
    for version, older in (
        ("1.20.1", True),
        ("1.30.0", True),
        ("1.31.1", False),
        ("1.32.0", False),
    ):
        monkeypatch.setattr(onnxruntime, "__version__", version)
        assert onnxruntime_subtracts_in_float32() is older


def test_a_failure_of_quantize_int8_falls_back_to_onnxruntimes_quantizer(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    from langchain_holodeck.embeddings import runtime

    def broken(graph: onnx.ModelProto) -> onnx.ModelProto:
        msg = "a scale went wrong"
        raise FloatingPointError(msg)

    monkeypatch.setattr(runtime, "quantize_int8", broken)
    with caplog.at_level(logging.WARNING):
        build_int8_graph(OnnxEmbeddings()._weights(), tmp_path / "g.onnx")
    assert "quantized by onnxruntime (FloatingPointError: a scale went wrong)" in caplog.text
    ops = _ops(tmp_path / "g.onnx")
    assert (ops["QAttention"], ops["BiasGelu"]) == (6, 6)  # still fused, quantized all the same


def test_an_unfused_graph_is_left_to_onnxruntimes_quantizer(graph: onnx.ModelProto) -> None:
    with pytest.raises(Unsupported, match=r"Transpose|multiplies two activations"):
        quantize_int8(graph)  # the attention's own products and transposes: onnxruntime's


def _last_hidden_state(graph: onnx.ModelProto, length: int) -> np.ndarray:
    import onnxruntime

    ids = np.array([[101, *range(3000, 3000 + length), 102]], dtype=np.int64)
    feed = {"input_ids": ids, "attention_mask": np.ones_like(ids), "token_type_ids": 0 * ids}
    session = onnxruntime.InferenceSession(
        graph.SerializeToString(),
        providers=["CPUExecutionProvider"],
    )
    return np.asarray(session.run(None, feed)[0])


@pytest.mark.parametrize("precision", ["int8", "fp32"])
def test_sessions_keep_add_and_layer_norm_apart(precision: str, tmp_path: Path) -> None:
    import onnxruntime

    weights = OnnxEmbeddings()._weights()
    graph = int8_model(weights) if precision == "int8" else weights

    def optimized(*, ours: bool) -> Counter[str]:
        options = onnxruntime.SessionOptions()
        options.log_severity_level = 3
        options.optimized_model_filepath = str(tmp_path / f"{precision}-{ours}.onnx")
        if ours:
            open_session(graph, options)
        else:
            onnxruntime.InferenceSession(str(graph), options, providers=["CPUExecutionProvider"])
        return _ops(Path(options.optimized_model_filepath))

    # onnxruntime fuses each residual Add + LayerNormalization unless told not to
    assert optimized(ours=False)["SkipLayerNormalization"] == 12
    ops = optimized(ours=True)
    assert (ops["SkipLayerNormalization"], ops["LayerNormalization"]) == (0, 13)


def test_only_the_nan_guards_of_a_softmax_are_dropped() -> None:
    from onnx import TensorProto, helper

    def guard(source: str, name: str) -> list[onnx.NodeProto]:
        return [
            helper.make_node("IsNaN", [source], [f"{name}_nan"]),
            helper.make_node("Where", [f"{name}_nan", "zero", source], [name]),
        ]

    nodes = [
        helper.make_node("Softmax", ["x"], ["p"], axis=-1),
        *guard("p", "p_safe"),
        helper.make_node("Relu", ["x"], ["r"]),
        *guard("r", "r_safe"),  # not a softmax: stays
        helper.make_node("Add", ["p_safe", "r_safe"], ["sum"]),
        helper.make_node("Softmax", ["sum"], ["q"], axis=-1),
        *guard("q", "out"),  # a graph output: stays
    ]
    tensor = helper.make_tensor_value_info
    graph = helper.make_model(
        helper.make_graph(
            nodes,
            "guards",
            [tensor("x", TensorProto.FLOAT, [2, 3])],
            [tensor("out", TensorProto.FLOAT, [2, 3])],
            initializer=[helper.make_tensor("zero", TensorProto.FLOAT, [], [0.0])],
        )
    )
    assert drop_nan_guards(graph) == 1
    assert [n.op_type for n in graph.graph.node] == [
        "Softmax", "Relu", "IsNaN", "Where", "Add", "Softmax", "IsNaN", "Where",
    ]  # fmt: skip
    assert list(graph.graph.node[4].input) == ["p", "r_safe"]
    onnx.checker.check_model(graph)

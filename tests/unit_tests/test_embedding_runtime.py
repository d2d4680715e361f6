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
import pytest

from langchain_holodeck.embeddings import OnnxEmbeddings
from langchain_holodeck.embeddings.runtime import (
    INT8_RECIPE,
    build_int8_graph,
    cpu_flags,
    cpu_has_int8_dot,
    default_cache_dir,
    drop_nan_guards,
    file_digest,
    int8_model,
    open_session,
    physical_cores,
)

REFERENCE = Path(__file__).resolve().parents[1] / "data" / "minilm_reference"


def test_int8_dot_products_are_read_from_the_cpu_flags(tmp_path: Path) -> None:
    assert cpu_has_int8_dot(["sse2", "avx512f", "avx512_vnni"])
    assert cpu_has_int8_dot(["fp", "asimd", "asimddp"])  # Arm dot-product
    assert cpu_has_int8_dot(["amx_int8"])
    assert not cpu_has_int8_dot(["sse2", "avx2", "fma"])
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
    import onnx

    return Counter(node.op_type for node in onnx.load(graph).graph.node)


def test_the_int8_graph_has_no_nan_guards_and_the_same_vectors_as_with_them(
    tmp_path: Path,
) -> None:
    weights = OnnxEmbeddings()._weights()
    # the user's cache: a graph left there by the recipe before (guards kept) is not read
    ops = _ops(int8_model(weights))
    assert (ops["Softmax"], ops["IsNaN"], ops["Where"]) == (6, 0, 1)  # the mask's Where stays
    # the graph as recipe v1 built it, planted in another cache under today's name
    planted = tmp_path / "onnx" / int8_model(weights).name
    build_int8_graph(weights, planted, nan_guards=True)
    ops = _ops(planted)
    assert (ops["Softmax"], ops["IsNaN"], ops["Where"]) == (6, 6, 7)
    texts = json.loads((REFERENCE / "texts.json").read_text(encoding="utf-8"))[:40]
    texts.append(" ".join(f"Paragraph {n}: power to deck {n}." for n in range(80)))
    today = OnnxEmbeddings(precision="int8")
    guarded = OnnxEmbeddings(precision="int8", cache_dir=tmp_path)
    for window in (128, 256):
        ours = np.vstack(today.embed_windows(texts, window=window))
        theirs = np.vstack(guarded.embed_windows(texts, window=window))
        assert len(ours) > len(texts)  # the long text has several windows
        np.testing.assert_array_equal(ours, theirs)  # bit for bit


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
    import onnx
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

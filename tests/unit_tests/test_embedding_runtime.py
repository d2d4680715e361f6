"""The int8 runtime of OnnxEmbeddings: CPU detection, physical cores, the cached int8 graph."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from langchain_holodeck.embeddings import OnnxEmbeddings
from langchain_holodeck.embeddings.runtime import (
    INT8_RECIPE,
    cpu_flags,
    cpu_has_int8_dot,
    default_cache_dir,
    file_digest,
    int8_model,
    physical_cores,
)


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

"""How ``OnnxEmbeddings`` runs on this CPU: int8 support, physical cores, the int8 graph.

The int8 path is onnxruntime's dynamic quantization of the model's fp32 graph: weights int8
per output channel, activations quantized per batch to uint8, matrix products in integer
instructions (``MatMulInteger``). It pays where the CPU multiplies int8 natively (x86 VNNI or
AMX, Arm dot-product) and on x86 with AVX2 (``int8_pays``); elsewhere fp32 stays. The
quantized graph is built once per model file and onnxruntime version, then read from a user
cache directory (``int8_model``).
Before quantizing, the graph loses the NaN guards its export put after each attention
softmax (``drop_nan_guards``): the same vectors, bit for bit, in ~20% less CPU; then each
attention block and GELU becomes one fused operator (``_fusions.fused_graph``). Sessions are
opened with ``UNFUSED_OPTIMIZERS`` off (``open_session``).
"""

from __future__ import annotations

import hashlib
import logging
import os
import platform
import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from langchain_holodeck._persist import atomic_write_bytes
from langchain_holodeck.embeddings._fusions import fused_graph
from langchain_holodeck.embeddings._quantize import Unsupported, quantize_int8

if TYPE_CHECKING:
    import onnx
    import onnxruntime

logger = logging.getLogger(__name__)

INT8_RECIPE = "dyn-qint8-perchannel-v3"
"""Names the graph's build settings; part of the cache key, so a new recipe rebuilds.

v1: constants folded, then dynamic quantization, weights per output channel. v2: the same,
without the softmax NaN guards (``drop_nan_guards``); vectors identical to v1's. v3: v2 with
each attention block one ``QAttention`` and each GELU one ``BiasGelu`` (``fused_graph``);
1.09-1.12x the windows per CPU-second at the same agreement with the fp32 vectors
(``benchmarks/bench_int8.py --only-graphs``).
"""
UNFUSED_OPTIMIZERS: tuple[str, ...] = ("SkipLayerNormFusion",)
"""onnxruntime graph optimizers ``OnnxEmbeddings`` sessions leave off (``disabled_optimizers``).

``SkipLayerNormFusion`` turns each residual ``Add`` + ``LayerNormalization`` into one
``SkipLayerNormalization``, whose CPU kernel took 19% of an int8 window's time (profiled: more
than twice the plain ``Add`` and ``LayerNormalization`` it replaces). Without it, int8 ran
1.22x the windows of 128 and 1.13x those of 256 per CPU-second (``benchmarks/bench_int8.py
--only-graphs``, SciFact abstracts) at the same agreement with the fp32 vectors (mean cosine
0.99475 vs 0.99474; min cosine 0.9954 to the fused run's), and fp32 batches 1.07x (a scratch
run), with the same vectors (cosine >= 0.9999997).
"""
_INT8_CPU_FLAGS = frozenset({"avx512_vnni", "avx_vnni", "amx_int8", "asimddp"})
"""``/proc/cpuinfo`` flags of CPUs with native int8 dot products (VNNI, AMX, Arm dotprod)."""


def cpu_flags(cpuinfo: Path = Path("/proc/cpuinfo")) -> frozenset[str]:
    """The CPU feature flags the kernel reports (empty where there is no ``/proc/cpuinfo``)."""
    try:
        text = cpuinfo.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return frozenset()
    for line in text.splitlines():
        key, _, value = line.partition(":")
        if key.strip() in {"flags", "Features"}:
            return frozenset(value.split())
    return frozenset()


def cpu_has_int8_dot(flags: Iterable[str] | None = None) -> bool:
    """Whether the CPU multiplies int8 natively (x86 VNNI/AMX, Arm dotprod; Apple silicon).

    ``flags`` defaults to this machine's (``cpu_flags()``).
    """
    if flags is None:
        if platform.system() == "Darwin" and platform.machine() == "arm64":
            return True
        flags = cpu_flags()
    return not _INT8_CPU_FLAGS.isdisjoint(flags)


def int8_pays(flags: Iterable[str] | None = None) -> bool:
    """Whether int8 compute runs faster than fp32 here: the default precision's test.

    Where the CPU multiplies int8 natively (``cpu_has_int8_dot``), and on x86 with AVX2, where
    onnxruntime multiplies unsigned by signed bytes in pairs (``vpmaddubsw``). On a 2-core
    AMD EPYC with AVX2 and no VNNI, int8 ran 2.2-2.6x the windows of 128 per CPU-second of
    fp32 (``benchmarks/bench_int8.py``; docs/embeddings.md). ``flags`` defaults to this
    machine's (``cpu_flags()``).
    """
    if flags is None:
        if cpu_has_int8_dot():
            return True
        flags = cpu_flags()
    flags = frozenset(flags)
    return cpu_has_int8_dot(flags) or "avx2" in flags


def physical_cores(sysfs: Path = Path("/sys/devices/system/cpu")) -> int:
    """Physical cores this process may run on (hyper-threads counted once), at least 1.

    Read from Linux sysfs topology for the CPUs in the process's affinity mask; elsewhere
    ``os.cpu_count()``.
    """
    try:
        allowed = sorted(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return max(1, os.cpu_count() or 1)
    cores: set[tuple[str, str]] = set()
    for cpu in allowed:
        topology = sysfs / f"cpu{cpu}" / "topology"
        try:
            package = (topology / "physical_package_id").read_text().strip()
            core = (topology / "core_id").read_text().strip()
        except OSError:
            return max(1, len(allowed))
        cores.add((package, core))
    return max(1, len(cores))


def default_cache_dir() -> Path:
    """``$HOLODECK_CACHE_DIR``, else ``$XDG_CACHE_HOME/langchain-holodeck`` (``~/.cache``)."""
    explicit = os.environ.get("HOLODECK_CACHE_DIR")
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "langchain-holodeck"


def file_digest(path: Path) -> str:
    """SHA-256 of a file's bytes (hex)."""
    digest = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def drop_nan_guards(graph: onnx.ModelProto) -> int:
    """Remove each ``Where(IsNaN(p), 0, p)`` whose ``p`` is a ``Softmax``; return how many.

    PyTorch's export of scaled-dot-product attention guards the attention weights against
    NaN (a row whose keys are all masked with ``-inf``). A softmax of finite scores has no
    NaN, so the guard is the identity: its readers read ``p`` itself, bit for bit the same.
    It is not free: onnxruntime's broadcasting ``Where`` took ~10% of an int8 window's time.
    The scores are finite: the windows ``OnnxEmbeddings`` runs in int8 have no padding, so
    nothing is masked (and all-MiniLM-L6-v2's export masks with the lowest float, not
    ``-inf``). A guard whose output is a graph output stays (output names are the API).
    """
    nodes = graph.graph.node
    producer = {name: node for node in nodes for name in node.output}
    outputs = {output.name for output in graph.graph.output}
    bypass: dict[str, str] = {}  # a guard's output -> the softmax output it guarded
    checks: set[str] = set()
    for node in nodes:
        if node.op_type != "Where" or len(node.input) != 3 or node.output[0] in outputs:
            continue
        check, source = producer.get(node.input[0]), producer.get(node.input[2])
        if (
            check is not None
            and source is not None
            and check.op_type == "IsNaN"
            and check.input[0] == node.input[2]
            and source.op_type == "Softmax"
        ):
            bypass[node.output[0]] = node.input[2]
            checks.add(node.input[0])
    kept = [node for node in nodes if node.output[0] not in bypass]
    still_read = {name for node in kept for name in node.input} | outputs
    kept = [node for node in kept if node.output[0] not in checks - still_read]
    for node in kept:
        for i, name in enumerate(node.input):
            node.input[i] = bypass.get(name, name)
    del nodes[:]
    nodes.extend(kept)
    return len(bypass)


def open_session(graph: Path, options: onnxruntime.SessionOptions) -> onnxruntime.InferenceSession:
    """An onnxruntime CPU session of the ONNX file ``graph``, ``UNFUSED_OPTIMIZERS`` left off."""
    import onnxruntime

    return onnxruntime.InferenceSession(
        str(graph),
        options,
        providers=["CPUExecutionProvider"],
        disabled_optimizers=list(UNFUSED_OPTIMIZERS),
    )


def int8_model(model: Path, *, cache_dir: Path | None = None) -> Path:
    """The int8 graph of the ONNX file ``model``, built on first use and cached.

    The cache key is the model's SHA-256, the onnxruntime version and ``INT8_RECIPE``; the
    file is written atomically, so concurrent first loads at worst both build it. Building
    (``build_int8_graph``) takes a few CPU-seconds: onnxruntime folds the graph's constants
    (so int8 weights stored with a dequantize step become plain fp32 ones), the softmax NaN
    guards go (``drop_nan_guards``), attention and GELU are fused (``fused_graph``), then
    ``quantize_dynamic`` quantizes every weight matrix product per output channel.

    Raises:
        ImportError: When the ``onnx`` package, which the quantizer needs, is missing.
    """
    import onnxruntime

    directory = (cache_dir or default_cache_dir()) / "onnx"
    key = f"{file_digest(model)[:24]}-ort{onnxruntime.__version__}-{INT8_RECIPE}"
    target = directory / f"{model.stem}-{key}.int8.onnx"
    if target.is_file():  # built before: no need of the quantizer (its imports take ~1 s)
        return target
    directory.mkdir(parents=True, exist_ok=True)
    logger.info("OnnxEmbeddings: building the int8 graph of %s once, into %s", model, target)
    build_int8_graph(model, target)
    return target


def folded_graph(model: Path, *, directory: Path | None = None) -> onnx.ModelProto:
    """The fp32 graph of the ONNX file ``model``, its constants folded by onnxruntime.

    Folding turns weights stored as int8 with a dequantize step into plain fp32 ones.
    ``directory`` holds the intermediate file (default: a temporary directory).
    """
    import onnx
    import onnxruntime

    with tempfile.TemporaryDirectory(dir=directory) as tmp:
        folded = Path(tmp) / "fp32.onnx"
        options = onnxruntime.SessionOptions()
        options.log_severity_level = 3
        options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_ENABLE_BASIC
        options.optimized_model_filepath = str(folded)
        onnxruntime.InferenceSession(str(model), options, providers=["CPUExecutionProvider"])
        return onnx.load(folded)


def build_int8_graph(
    model: Path, target: Path, *, nan_guards: bool = False, fuse: bool = True
) -> None:
    """Write the int8 graph of the ONNX file ``model`` to ``target`` (atomically), uncached.

    ``INT8_RECIPE``: fold the constants, drop the softmax NaN guards (``nan_guards=True``
    keeps them: recipe v1, for comparisons), fuse attention and GELU (``fuse=False`` does not:
    recipe v2), quantize dynamically, weights per channel. A fused graph is quantized by
    ``_quantize.quantize_int8`` (onnxruntime's numbers, whole-array numpy: ~0.3 s against
    ~1.5 to 2.4 s); any other, or one it does not know, by ``quantize_dynamic``.

    Raises:
        ImportError: When the ``onnx`` package, which the quantizer needs, is missing.
    """
    try:
        from onnxruntime.quantization import QuantType, quantize_dynamic
        from onnxruntime.quantization.quant_utils import add_pre_process_metadata
    except ImportError as e:  # onnxruntime.quantization imports onnx
        msg = "the int8 path of OnnxEmbeddings needs onnx: pip install onnx"
        raise ImportError(msg) from e
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=target.parent) as tmp:
        graph = folded_graph(model, directory=Path(tmp))
        if not nan_guards:
            drop_nan_guards(graph)
        if fuse:
            graph, fusions = fused_graph(graph)
            logger.info("OnnxEmbeddings: int8 graph fused: %s", ", ".join(fusions) or "nothing")
            try:  # the same graph as quantize_dynamic's, ~6x sooner (_quantize)
                data = quantize_int8(graph).SerializeToString()
            except Unsupported as e:  # e.g. left unfused: onnxruntime's quantizer
                logger.info("OnnxEmbeddings: int8 graph quantized by onnxruntime (%s)", e)
            except Exception as e:  # a failure of ours must not cost the int8 path
                logger.warning(
                    "OnnxEmbeddings: int8 graph quantized by onnxruntime (%s: %s)",
                    type(e).__name__,
                    e,
                )
            else:
                atomic_write_bytes(target, data)
                return
        add_pre_process_metadata(graph)  # the folding is its pre-processing: no root warning
        quantized = Path(tmp) / "int8.onnx"
        quantize_dynamic(graph, quantized, weight_type=QuantType.QInt8, per_channel=True)
        data = quantized.read_bytes()
    atomic_write_bytes(target, data)

"""OpenTelemetry spans when ``opentelemetry-api`` is installed; a no-op span otherwise."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping
from typing import Any, Protocol

__all__ = ["TRACER_NAME", "AttributeValue", "Attributes", "SpanLike", "set_attributes", "span"]

TRACER_NAME = "langchain_holodeck"
"""The instrumentation scope of every span the package emits."""

AttributeValue = str | bool | int | float
Attributes = dict[str, AttributeValue | None]


class SpanLike(Protocol):
    """The part of an OpenTelemetry span the package uses."""

    def set_attribute(self, key: str, value: AttributeValue) -> None:
        """Record one attribute."""
        ...


class _NoSpan:
    def set_attribute(self, key: str, value: AttributeValue) -> None:
        return None


class _NoSpanContext(contextlib.AbstractContextManager[SpanLike]):
    """The block's span when nothing records: one shared object, no generator per span."""

    def __enter__(self) -> SpanLike:
        return _NO_SPAN

    def __exit__(self, *exc: object) -> None:
        return None


_NO_SPAN = _NoSpan()
_NOT_RECORDING = _NoSpanContext()
_UNSET: Any = object()
_trace: Any = _UNSET  # the ``opentelemetry.trace`` module, None when not installed


def _trace_module() -> Any:
    global _trace
    if _trace is _UNSET:
        try:
            from opentelemetry import trace as module
        except ImportError:
            module = None  # type: ignore[assignment]  # remembered: not installed
        _trace = module
    return _trace


def span(
    name: str,
    attributes: Mapping[str, AttributeValue | None] | None = None,
    *,
    parent: SpanLike | None = None,
) -> contextlib.AbstractContextManager[SpanLike]:
    """A span named ``name`` with ``attributes`` (``None`` values are left out).

    The span is the current one while the block runs (children nest under it, also in
    threads that run a copied ``contextvars`` context). Without ``opentelemetry-api``, or
    before a tracer provider is set, the block gets a span that records nothing (and costs
    next to nothing: a search opens several per query). ``parent``: the span this one nests
    under, when the caller has it; a parent that records nothing gets children that record
    nothing, without asking for the tracer provider again (about a microsecond each).
    """
    if parent is _NO_SPAN:
        return _NOT_RECORDING
    trace = _trace_module()
    if trace is None or isinstance(trace.get_tracer_provider(), trace.ProxyTracerProvider):
        # no SDK configured (in code or OTEL_PYTHON_TRACER_PROVIDER): the tracer would hand
        # out non-recording spans; skip building them
        return _NOT_RECORDING
    return _recording(trace, name, attributes)


@contextlib.contextmanager
def _recording(
    trace: Any, name: str, attributes: Mapping[str, AttributeValue | None] | None
) -> Iterator[SpanLike]:
    tracer = trace.get_tracer(TRACER_NAME)
    with tracer.start_as_current_span(name) as current:
        set_attributes(current, attributes or {})
        yield current


def set_attributes(target: SpanLike, attributes: Mapping[str, AttributeValue | None]) -> None:
    """Set every non-``None`` attribute on ``target``."""
    for key, value in attributes.items():
        if value is not None:
            target.set_attribute(key, value)

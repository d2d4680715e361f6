"""Bad configuration input: every failure is a clean ConfigError, nothing hangs, nothing leaks."""

from __future__ import annotations

import logging
import re
import string
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from langchain_holodeck.config import (
    AgentConfig,
    HierarchicalDocumentToolConfig,
    VectorStoreToolConfig,
    load_agent_config,
    load_project_database_config,
    resolve_database_config,
)
from langchain_holodeck.errors import ConfigError

FAKE_KEY = "sk-FAKE-reliability-4c1d8e"
FAKE_PASSWORD = "pw-FAKE-reliability-0a7b"
ENV = {
    "COHERE_API_KEY": FAKE_KEY,
    "REDIS_URL": f"redis://:{FAKE_PASSWORD}@cache:6379",
    "OPENSEARCH_PASSWORD": FAKE_PASSWORD,
}
FUZZ = settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)


def load_text(path: Path, text: str | bytes) -> AgentConfig | ConfigError:
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text, encoding="utf-8")
    try:
        return load_agent_config(path, environ=ENV)
    except ConfigError as error:
        return error


def assert_clean(error: ConfigError, display: str) -> None:
    message = str(error)
    assert message.strip(), "empty message"
    for line in message.splitlines():
        assert line.startswith(display), line
    assert FAKE_KEY not in message
    assert FAKE_PASSWORD not in message
    assert "Traceback" not in message


# --- YAML bombs and hostile documents -------------------------------------------------------


def billion_laughs(levels: int = 9) -> str:
    lines = ['l0: &l0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    lines += [f"l{i}: &l{i} [" + ", ".join([f"*l{i - 1}"] * 9) + "]" for i in range(1, levels)]
    return "\n".join(lines) + "\ntools: []\n"


@pytest.mark.timeout(20)
@pytest.mark.parametrize(
    ("name", "text"),
    [
        ("billion laughs", billion_laughs()),
        (
            "mapping bomb with merge keys",
            "m0: &m0 {a: 1, b: 2, c: 3, d: 4, e: 5, f: 6, g: 7, h: 8, i: 9, j: 10}\n"
            + "".join(
                f"m{i}: &m{i} {{" + ", ".join(f"k{j}: *m{i - 1}" for j in range(10)) + "}\n"
                for i in range(1, 8)
            )
            + "tools: []\n",
        ),
        (
            "long string aliased many times",
            "s: &s '" + "x" * 500_000 + "'\nmany: [" + ", ".join(["*s"] * 100) + "]\ntools: []\n",
        ),
        (
            "bomb hidden inside a tool",
            billion_laughs().replace("tools: []", "tools: [{type: vectorstore, x: *l8}]"),
        ),
    ],
)
def test_alias_bombs_fail_fast_and_cleanly(tmp_path: Path, name: str, text: str) -> None:
    path = tmp_path / "agent.yaml"
    result = load_text(path, text)
    assert isinstance(result, ConfigError), name
    assert "alias bomb" in str(result)
    assert_clean(result, str(path))


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("a: &a [*a]\ntools: []\n", "refers to itself"),
        ("a: &a {b: *a}\ntools: []\n", "refers to itself"),
        ("tools: *missing\n", "undefined alias"),
        pytest.param(
            "tools: " + "[" * 5000 + "]" * 5000 + "\n", "nested too deeply", id="5000-deep"
        ),
        pytest.param(
            "tools:\n" + "".join("  " * i + "-\n" for i in range(1, 120)),
            "deeper than 50",
            id="119-deep-block",
        ),
        pytest.param("tools: " + "[" * 60 + "]" * 60 + "\n", "deeper than 50", id="60-deep-flow"),
        ("tools: !!python/object/apply:os.system ['echo pwned']\n", "could not determine a"),
        ("tools: !!python/name:os.system\n", "could not determine a constructor"),
        ("null\n", "got a single value"),
        ("42\n", "got a single value"),
        ("[]\n", "got a list"),
        ("'tools: []'\n", "got a single value"),
        ("tools: []\n---\nname: second\n", "expected a single document"),
        ("\t\ttools: []\n", "could not parse YAML"),
        ("tools: [\n", "could not parse YAML"),
        ("tools: []\ntools: []\n", "duplicate key (lines 1 and 2)"),
        ("? [a, b]\n: c\ntools: []\n", "found unhashable key"),
        ('tools: []\nname: "\\x0b"\n\x0b', "is not allowed in YAML"),
        ("tools: [{type: vectorstore, name: kb, description: d, source: 2024-01-01}]\n", "source"),
    ],
)
def test_hostile_documents_are_rejected_cleanly(tmp_path: Path, text: str, fragment: str) -> None:
    path = tmp_path / "agent.yaml"
    result = load_text(path, text)
    assert isinstance(result, ConfigError)
    assert fragment in str(result)
    assert_clean(result, str(path))


@pytest.mark.parametrize(
    "payload",
    [
        b"\x00\x01\x02\x03binary\xff",
        b"\xef\xbb\xbftools: [{type: vectorstore, name: kb, source: s}]\n",  # a BOM is fine
        "tools: []\n".encode("utf-16"),
        b"tools: []\n" + b"\x80" * 10,
    ],
)
def test_binary_and_mis_encoded_files(tmp_path: Path, payload: bytes) -> None:
    path = tmp_path / "agent.yaml"
    result = load_text(path, payload)
    if payload.startswith(b"\xef\xbb\xbf"):
        assert isinstance(result, AgentConfig)
    else:
        assert isinstance(result, ConfigError)
        assert_clean(result, str(path))


def test_oversized_file_is_refused_before_parsing(tmp_path: Path) -> None:
    path = tmp_path / "agent.yaml"
    # Would be an alias bomb and a syntax error too: the size check must come first.
    result = load_text(path, billion_laughs() + "x: [" * 300_000)
    assert isinstance(result, ConfigError)
    assert "larger than 1048576 bytes" in str(result)


def test_unset_variable_is_an_error_naming_it(tmp_path: Path) -> None:
    path = tmp_path / "agent.yaml"
    text = (
        "tools:\n  - {type: vectorstore, name: kb, description: '${NOT_SET_ANYWHERE}', source: s}\n"
    )
    result = load_text(path, text)
    assert isinstance(result, ConfigError)
    assert "tools[0].description: environment variable NOT_SET_ANYWHERE is not set" in str(result)


# --- generated input --------------------------------------------------------------------------

TOOL_FIELDS = sorted(
    set(VectorStoreToolConfig.model_fields) | set(HierarchicalDocumentToolConfig.model_fields)
)
scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(10**6), max_value=10**6),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=30),
    st.sampled_from(
        ["${COHERE_API_KEY}", "${REDIS_URL}", "$${X}", "${", "${UNSET_VAR}", "redis://h", ""]
    ),
)
values = st.recursive(
    scalars,
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.dictionaries(
            st.sampled_from([*TOOL_FIELDS, "provider", "api_key", "x"]), inner, max_size=4
        )
    ),
    max_leaves=12,
)


@st.composite
def tools(draw: st.DrawFn) -> dict[str, Any]:
    tool: dict[str, Any] = {
        "type": draw(st.sampled_from(["vectorstore", "hierarchical_document", "other"])),
        "name": draw(st.sampled_from(["kb", "bad name", "", "x" * 70])),
        "description": "d",
        "source": "docs",
    }
    for field in draw(st.lists(st.sampled_from(TOOL_FIELDS), max_size=5, unique=True)):
        tool[field] = draw(values)
    return tool


@FUZZ
@given(tool_list=st.lists(tools(), max_size=3))
def test_generated_tool_configs_load_or_fail_cleanly(
    tmp_path: Path, tool_list: list[dict[str, Any]]
) -> None:
    path = tmp_path / "agent.yaml"
    result = load_text(path, yaml.safe_dump({"tools": tool_list}))
    if isinstance(result, ConfigError):
        assert_clean(result, str(path))
        # Every line names a field path (or the document) after the file name.
        for line in str(result).splitlines():
            assert re.match(re.escape(str(path)) + r": \S", line), line
    else:
        assert len(result.tools) == len(tool_list)
        assert FAKE_KEY not in repr(result)
        assert FAKE_PASSWORD not in repr(result)


yaml_alphabet = st.sampled_from([*string.printable, "&a", "*a", "<<", "${", "!!", "---", "\x00"])


@FUZZ
@given(text=st.lists(yaml_alphabet, max_size=200).map("".join))
def test_arbitrary_text_never_raises_anything_but_config_error(tmp_path: Path, text: str) -> None:
    path = tmp_path / "agent.yaml"
    result = load_text(path, text)
    if isinstance(result, ConfigError):
        assert_clean(result, str(path))


@FUZZ
@given(payload=st.binary(max_size=300))
def test_arbitrary_bytes_never_raise_anything_but_config_error(
    tmp_path: Path, payload: bytes
) -> None:
    result = load_text(tmp_path / "agent.yaml", payload)
    assert isinstance(result, (AgentConfig, ConfigError))


@FUZZ
@given(section=values)
def test_generated_project_database_sections(tmp_path: Path, section: Any) -> None:
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump({"vectorstore": section}), encoding="utf-8")
    try:
        found = load_project_database_config(path, environ=ENV)
    except ConfigError as error:
        assert_clean(error, str(path))
    else:
        assert found is None or FAKE_PASSWORD not in repr(found)


# --- secrets never reach logs -------------------------------------------------------------------


def test_secrets_never_reach_logs_or_messages(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    project = tmp_path / "project"
    (project / ".holodeck").mkdir(parents=True)
    (project / ".holodeck" / "config.yaml").write_text(
        "vectorstore: {provider: redis, connection_string: '${REDIS_URL}', index_name: a}\n",
        encoding="utf-8",
    )
    messages = []
    found = resolve_database_config(None, project_dir=project, home_dir=tmp_path, environ=ENV)
    assert found is not None
    messages.append(repr(found))
    bad = [
        "tools: [{type: vectorstore, name: kb, description: d, source: s, top_k: 0,"
        " reranker: {provider: cohere, api_key: '${COHERE_API_KEY}', model: ''}}]\n",
        f"tools: [{{type: vectorstore, name: kb, description: d, source: s,"
        f" reranker: {{provider: cohere, api_key: {FAKE_KEY}}}}}]\n",
        "tools: [{type: hierarchical_document, name: h, source: s, keyword_index: {provider:"
        " opensearch, endpoint: 'http://h', username: u, password: '${OPENSEARCH_PASSWORD}',"
        " api_key: '${COHERE_API_KEY}'}}]\n",
        "tools: [{type: vectorstore, name: kb, description: d, source: s,"
        " database: {provider: redis, connection_string: '${REDIS_URL}', index_name: 'a b'}}]\n",
        f"tools: [{{type: vectorstore, name: kb, description: d, source: s,"
        f" database: {{provider: redis, connection_string: 'redis://u:{FAKE_PASSWORD}@h',"
        f" vector_algorithm: IVF}}}}]\n",
        f"tools: [{{name: [{FAKE_KEY}\n",
    ]
    for text in bad:
        result = load_text(tmp_path / "agent.yaml", text)
        assert isinstance(result, ConfigError), text
        messages.append(str(result))
    everything = "\n".join([*messages, caplog.text])
    assert FAKE_KEY not in everything
    assert FAKE_PASSWORD not in everything
    assert "***" in everything  # masked values are still shown as masked

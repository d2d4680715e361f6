"""Issue 25, hostile files and sources: each is read losslessly, or refused in one line.

- 3: a file name that is not UTF-8 (byte 0xff) crashed every ingest with
  ``UnicodeEncodeError ... surrogates not allowed``; now its ``source_path`` spells the byte
  ``\\xff``, its ids are stable, and the store saves and loads.
- 9: one invalid byte turned a whole UTF-8 file into cp1252 mojibake.
- 12: ``ingest /`` walked /proc and /sys.
- 16: valid JSON nested 200k deep was skipped with ``RecursionError``.
"""

from __future__ import annotations

import logging
import os
import zipfile
from pathlib import Path

import pytest

from langchain_holodeck.errors import ConfigError
from langchain_holodeck.ingestion import IngestionPipeline
from langchain_holodeck.loaders import SourceLoader
from langchain_holodeck.vectorstores import MatrixVectorStore
from tests.helpers import HashingEmbeddings

LOGGER = "langchain_holodeck.loaders"


def test_a_file_name_that_is_not_utf8_is_ingested_under_a_stable_escaped_name(
    tmp_path: Path,
) -> None:
    src = tmp_path / "src"
    src.mkdir()
    name = os.fsencode(src) + b"/caf\xff.md"
    with open(name, "wb") as f:  # a bytes path: pathlib decodes it lossily
        f.write(b"# Menu\n\nCoffee of the day.\n")
    (src / "good.md").write_text("# Good\n\nStill loaded.\n", encoding="utf-8")

    runs = []
    for _ in range(2):
        store = MatrixVectorStore(HashingEmbeddings())
        result = IngestionPipeline(store, namespace="kb", base_dir=tmp_path).invoke("src")
        assert (result.failed, result.errors) == (0, ())
        store.dump(tmp_path / "store")
        loaded = MatrixVectorStore.load(tmp_path / "store", HashingEmbeddings())
        runs.append({d.id: d.metadata["source_path"] for d in loaded.iter_documents()})
    assert runs[0] == runs[1]  # same ids, run after run
    assert set(runs[0].values()) == {"src/caf\\xff.md", "src/good.md"}


def test_a_file_named_as_another_reads_with_its_byte_escaped_is_skipped_in_one_line(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """``caf<0xff>.md`` and a file literally named ``caf\\xff.md`` would share their chunk ids:
    the second is skipped with a WARNING; the ingest goes on (found 2026-12-07: a traceback,
    every run, nothing ingested)."""
    src = tmp_path / "src"
    src.mkdir()
    with open(os.fsencode(src) + b"/caf\xff.md", "wb") as f:
        f.write(b"# Raw\n\nThe byte name.\n")
    (src / "caf\\xff.md").write_text("# Literal\n\nThe backslash name.\n", encoding="utf-8")
    (src / "good.md").write_text("# Good\n\nStill loaded.\n", encoding="utf-8")
    store = MatrixVectorStore(HashingEmbeddings())
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        result = IngestionPipeline(store, namespace="kb", base_dir=tmp_path).invoke("src")
    assert (result.added, result.failed) == (2, 0)
    assert sorted(d.metadata["source_path"] for d in store.iter_documents()) == [
        "src/caf\\xff.md",
        "src/good.md",
    ]
    assert [r.getMessage() for r in caplog.records] == [
        "Skipping a second file named src/caf\\xff.md: a byte that is not UTF-8 is spelt "
        "\\xNN in names, and another file's name has these characters; rename one."
    ]


@pytest.mark.parametrize(
    ("name", "data"),
    [
        ("menu.json", '{"title": "caf\\udce9 menu", "body": "tea earl grey hot"}\n'),
        ("menu.jsonl", '{"title": "caf\\udce9 menu"}\n{"body": "tea earl grey hot"}\n'),
    ],
)
def test_a_lone_surrogate_escape_in_json_is_read_as_the_replacement_character(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, name: str, data: str
) -> None:
    """``"caf\\udce9"`` is valid JSON and no UTF-8: the chunk hash raised UnicodeEncodeError and
    the whole ingest stopped, every run (found 2026-12-07, a probe)."""
    src = tmp_path / "src"
    src.mkdir()
    (src / name).write_text(data, encoding="utf-8")
    (src / "notes.md").write_text("# Notes\n\nWarp core schedule.\n", encoding="utf-8")
    store = MatrixVectorStore(HashingEmbeddings())
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        result = IngestionPipeline(store, namespace="kb", base_dir=tmp_path).invoke("src")
    assert (result.added, result.failed) == (2, 0)
    [text] = [d.page_content for d in store.iter_documents() if name in d.metadata["source"]]
    assert "caf\ufffd menu" in text
    assert [r.getMessage() for r in caplog.records] == [
        f"src/{name}: 1 lone surrogate escape(s) (half of a UTF-16 pair, not text) replaced "
        "with U+FFFD."
    ]
    store.dump(tmp_path / "store")  # UTF-8 all through


def test_dump_names_a_document_holding_a_lone_surrogate(tmp_path: Path) -> None:
    from langchain_core.documents import Document

    store = MatrixVectorStore(HashingEmbeddings())
    store.add_documents([Document(id="bad", page_content="caf\udce9")])
    with pytest.raises(ValueError, match="document 'bad' holds text that is not Unicode"):
        store.dump(tmp_path / "store")


def test_one_invalid_byte_keeps_a_utf8_file_utf8(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    line = "Crème brûlée, 東京の抹茶, naïve café au lait.\n"
    data = ("# Café menu\n\n" + line * 5).encode() + b"\xff" + (line * 15).encode()
    (tmp_path / "menu.md").write_bytes(data)
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        (doc,) = SourceLoader(tmp_path / "menu.md", base_dir=tmp_path).load()
    assert "Crème brûlée, 東京の抹茶" in doc.page_content
    assert "Ã" not in doc.page_content
    assert doc.page_content.count("\ufffd") == 1
    warned = [r.getMessage() for r in caplog.records if "menu.md" in r.getMessage()]
    assert len(warned) == 1
    assert "1 invalid UTF-8 byte sequence(s) replaced" in warned[0]


def test_a_latin1_file_is_still_read_as_latin1(tmp_path: Path) -> None:
    (tmp_path / "old.md").write_bytes("# Café\n\nUne crème brûlée.\n".encode("cp1252"))
    (doc,) = SourceLoader(tmp_path / "old.md", base_dir=tmp_path).load()
    assert "Une crème brûlée." in doc.page_content


_FRENCH_GUIDE = (
    "Guide d'installation. Avant de commencer, vérifiez que le système répond aux exigences "
    "préalables. Ouvrez le panneau de configuration, sélectionnez « Paramètres avancés » et "
    "cochez « Activer les mises à jour ». Si l'opération échoue, redémarrez et réessayez. "
) * 5


@pytest.mark.parametrize(
    "text",
    [
        "Ça coûte très cher, à côté de l'hôtel. L'installation du système nécessite une "
        "configuration préalable.",
        "Perché è così? L'installazione richiede più tempo. La città è bella e l'università "
        "è già aperta.",
        "Ação não é fácil. São Paulo está ótimo, coração. Exceção às regras. Informações "
        "sobre a instalação.",
        _FRENCH_GUIDE,
        "Grüße aus München, schöne Straße. Die Installation erfordert eine zusätzliche Datei.",
        "El niño comió piña en España. ¿Dónde está la estación? Información útil.",
        # found 2026-12-07 (a probe): too short for the detector to offer cp1252 at all, read
        # as Big5 or UTF-16 ("Eu n緌 sei.", "牴珨")
        "Eu não sei.",
        "Prix: très cher",
        "très",
    ],
    ids=[
        "french",
        "italian",
        "portuguese",
        "french-guide",
        "german",
        "spanish",
        "short-portuguese",
        "short-french",
        "one-word",
    ],
)
def test_western_european_cp1252_text_is_read_as_cp1252(tmp_path: Path, text: str) -> None:
    # charset-normalizer scores cp1252 a little messier than cp775 / cp1250 / cp1257 on
    # these: très was read trĶs, così cosě, não năo.
    (tmp_path / "note.txt").write_bytes(f"{text}\n".encode("cp1252"))
    (doc,) = SourceLoader(tmp_path / "note.txt", base_dir=tmp_path).load()
    assert doc.page_content == f"{text}\n"


_ENGLISH = "The installation guide explains how to configure the server and the client. "


@pytest.mark.parametrize(
    ("text", "encoding"),
    [
        ("这是一个中文测试文档。北京欢迎你。\n" * 3, "gbk"),
        ("日本語のテキストです。東京都の天気は晴れです。\n" * 3, "shift_jis"),
        (_ENGLISH * 3 + "設定檔案" + _ENGLISH * 3, "big5"),
        ("Привет, как дела? Это тестовый документ. Установка системы требует настройки.", "cp1251"),
        ("Καλημέρα κόσμε. Σήμερα η εγκατάσταση του συστήματος απαιτεί διαμόρφωση.", "cp1253"),
        ("Příliš žluťoučký kůň úpěl ďábelské ódy. Instalace vyžaduje konfiguraci.", "cp1250"),
        ("# Titre\n\nCafé crème brûlée, naïve façade — 20 €.\n", "utf-16"),
        ("# Titre\n\nCafé crème brûlée, naïve façade — 20 €.\n", "utf-8-sig"),
        # found 2026-12-07 (a probe): short ones, read right before the short-cp1252 rule, and
        # read as cp1252 by its first version ("2024”N 3ŒŽ 5“ú")
        ("2024年 3月 5日", "shift_jis"),
        ("日本語", "utf-16-le"),
        ("日本語", "utf-16-be"),
    ],
    ids=[
        "gbk",
        "shift-jis",
        "big5-in-english",
        "cp1251",
        "cp1253",
        "cp1250",
        "utf16",
        "utf8-bom",
        "short-shift-jis",
        "short-utf16-le",
        "short-utf16-be",
    ],
)
def test_other_encodings_are_not_read_as_the_cp1252_fallback(
    tmp_path: Path, text: str, encoding: str
) -> None:
    (tmp_path / "note.txt").write_bytes(text.encode(encoding))
    (doc,) = SourceLoader(tmp_path / "note.txt", base_dir=tmp_path).load()
    assert doc.page_content == text


@pytest.mark.parametrize("source", ["/", "/proc", "/sys/kernel", "/dev"])
def test_the_root_and_pseudo_file_systems_are_refused(source: str) -> None:
    if not os.path.exists(source):
        pytest.skip(f"{source} does not exist here")
    with pytest.raises(ConfigError, match="system directory"):
        list(SourceLoader(source).iter_files())


def test_json_nested_too_deep_to_parse_is_kept_as_written(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    depth = 200_000
    (tmp_path / "deep.json").write_text("[" * depth + "]" * depth, encoding="utf-8")
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        (doc,) = SourceLoader(tmp_path / "deep.json", base_dir=tmp_path).load()
    assert "[" * depth in doc.page_content
    assert any("nests too deeply" in r.getMessage() for r in caplog.records)


@pytest.mark.parametrize("suffix", ["docx", "pptx", "xlsx"])
def test_an_office_file_expanding_past_max_file_bytes_is_skipped_unopened(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, suffix: str
) -> None:
    """Item 8: a 725 KB .docx expanding to 310 MB ran 900 s at 3.6 GB RSS."""
    bomb = tmp_path / f"bomb.{suffix}"
    with (
        zipfile.ZipFile(bomb, "w", compression=zipfile.ZIP_DEFLATED) as archive,
        archive.open("word/document.xml", "w") as member,
    ):
        for _ in range(40):
            member.write(b"\0" * 1_000_000)
    assert bomb.stat().st_size < 200_000
    (tmp_path / "good.md").write_text("# Good\n\nStill loaded.\n", encoding="utf-8")
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        docs = SourceLoader(tmp_path, base_dir=tmp_path, max_file_bytes=10_000_000).load()
    assert [d.metadata["source_path"] for d in docs] == [f"{tmp_path.name}/good.md"]
    warned = [r.getMessage() for r in caplog.records if f"bomb.{suffix}" in r.getMessage()]
    assert warned == [
        f"Skipping {tmp_path.name}/bomb.{suffix}: it expands to 40000000 bytes, over "
        "max_file_bytes=10000000 (a zip bomb?); raise max_file_bytes to load it."
    ]


def test_a_corrupt_pdf_is_not_reparsed_or_rewarned_until_it_changes(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Item 16: every ``search`` (a re-sync) re-parsed a corrupt PDF and warned again."""
    from langchain_holodeck import HierarchicalDocumentTool, HierarchicalDocumentToolConfig

    monkeypatch.chdir(tmp_path)
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "good.md").write_text("# Good\n\nwarp core.\n", encoding="utf-8")
    broken = tmp_path / "src" / "broken.pdf"
    broken.write_bytes(b"%PDF-1.4\n" + b"\x00garbage" * 200)

    def warnings_after_a_run() -> list[str]:
        caplog.clear()
        config = HierarchicalDocumentToolConfig(
            type="hierarchical_document", name="kb", source="src"
        )
        tool = HierarchicalDocumentTool(
            config, embeddings=HashingEmbeddings(), base_dir=tmp_path, store_dir=tmp_path / "s"
        )
        with caplog.at_level(logging.WARNING):
            tool.initialize_sync()
        return [r.getMessage() for r in caplog.records if "broken.pdf" in r.getMessage()]

    assert len(warnings_after_a_run()) == 1
    assert warnings_after_a_run() == []  # the next process remembers the failure
    later = broken.stat().st_mtime + 10
    os.utime(broken, (later, later))
    assert len(warnings_after_a_run()) == 1  # changed: read (and warned about) again

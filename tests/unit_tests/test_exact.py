from pathlib import Path

import pytest
from langchain_core.documents import Document
from langchain_core.vectorstores import InMemoryVectorStore

from langchain_holodeck.exact import ExactMatchIndex, codes_in, parse_exact_query, versions_in
from langchain_holodeck.keyword_index import KeywordHit, KeywordIndex
from langchain_holodeck.splitters import StructuredMarkdownSplitter
from langchain_holodeck.sync import stable_id

ACT = "legal/holodeck_act.md"


def act_chunks(data_dir: Path, source_path: str = ACT) -> list[Document]:
    text = (data_dir / "legal" / "holodeck_act.md").read_text(encoding="utf-8")
    doc = Document(page_content=text, metadata={"source_path": source_path})
    chunks = StructuredMarkdownSplitter().split_documents([doc])
    return [
        c.model_copy(
            update={"id": stable_id("ns", f"{source_path}_chunk_{c.metadata['chunk_index']}")}
        )
        for c in chunks
    ]


@pytest.fixture
def chunks(data_dir: Path) -> list[Document]:
    return act_chunks(data_dir)


@pytest.fixture
def index(chunks: list[Document]) -> ExactMatchIndex:
    idx = ExactMatchIndex()
    idx.upsert(chunks)
    return idx


@pytest.mark.parametrize(
    ("query", "sections", "phrases"),
    [
        ("Section 203(a)(1)", ("203(a)(1)",), ()),
        ("what does § 4.2 say?", ("4.2",), ()),
        ("section 7 and Article 5", ("7", "5"), ()),
        ("sec. 4.2", ("4.2",), ()),
        # found 2026-12-07: no keyword, and a relative reference of a named section
        ("203(a)(1)", ("203(a)(1)",), ()),
        ("subsection (a)(1) of section 203", ("203(a)(1)",), ()),
        ("release notes of 4.2", (), ()),
        ('find "Safety  Interlock" and “arch controls”', (), ("safety interlock", "arch controls")),
        ("top 5 results about logs", (), ()),
        ('""', (), ()),
    ],
)
def test_parse_exact_query(query: str, sections: tuple, phrases: tuple) -> None:
    parsed = parse_exact_query(query)
    assert parsed.section_ids == sections
    assert parsed.phrases == phrases


def test_index_satisfies_keyword_protocol(index: ExactMatchIndex) -> None:
    assert isinstance(index, KeywordIndex)


def all_section_ids(chunks: list[Document]) -> list[str]:
    """Every section id of the act: the chunks' own and their enclosing sections'."""
    found = set()
    for c in chunks:
        sid = c.metadata["section_id"]
        while sid:
            found.add(sid)
            sid = sid[: sid.rindex("(")] if sid.endswith(")") else ""
    return sorted(s for s in found if not s.startswith("title-"))


def section_start(chunks: list[Document], sid: str) -> set[str]:
    """The chunks that start section ``sid``: its own, else its first sub-section chunk."""
    own = {c.id for c in chunks if c.metadata["section_id"] == sid}
    if own:
        return own
    subs = [c for c in chunks if c.metadata["section_id"].startswith(sid + "(")]
    return {min(subs, key=lambda c: c.metadata["chunk_index"]).id}


def test_every_section_of_the_act_is_found_first(
    index: ExactMatchIndex, chunks: list[Document]
) -> None:
    numbered = all_section_ids(chunks)
    assert {"101", "102", "102(a)", "201", "202", "203", "203(a)(1)"} <= set(numbered)
    templates = ["Section {}", "section {}", "§ {}", "§{}", "sec. {}", "What does Section {} say?"]
    total = hits = 0
    for sid in numbered:
        expected = section_start(chunks, sid)
        for template in templates:
            total += 1
            top = index.search(template.format(sid), k=5)
            hits += bool(top) and top[0].id in expected and top[0].score == 2.0
    assert hits == total


def test_parent_section_lists_its_subsections_after_itself(
    index: ExactMatchIndex, chunks: list[Document]
) -> None:
    hits = index.search("Section 203", k=10)
    subs = sorted(
        (c for c in chunks if c.metadata["section_id"].startswith("203")),
        key=lambda c: c.metadata["chunk_index"],
    )
    assert [h.id for h in hits] == [c.id for c in subs]
    assert hits[0].score == 2.0
    assert all(h.score == 0.5 for h in hits[1:])


def test_article_references(index: ExactMatchIndex, chunks: list[Document]) -> None:
    assert index.search("Section 201(b)", k=1)[0].id in section_start(chunks, "201(b)")
    # the act's headings say "Section 201": an Article 201 is another thing (found 2026-12-07)
    assert index.search("Article 201(b)", k=1) == []


def indexed(files: dict[str, str]) -> tuple[ExactMatchIndex, dict[tuple[str, str], str]]:
    """An index of ``files`` (path -> text) and its chunk ids by (path, section id)."""
    docs = [Document(page_content=text, metadata={"source_path": p}) for p, text in files.items()]
    chunks = [
        c.model_copy(update={"id": f"{c.metadata['source_path']}#{c.metadata['chunk_index']}"})
        for c in StructuredMarkdownSplitter().split_documents(docs)
    ]
    idx = ExactMatchIndex()
    idx.upsert(chunks)
    return idx, {(c.metadata["source_path"], c.metadata["section_id"]): str(c.id) for c in chunks}


POLICIES = {
    "employee-handbook.md": "# Employee Handbook\n\n## Section 4.2 Sick leave\n\nTen days.\n",
    "security-policy.md": "# Security Policy\n\n## Section 4.2 Passwords\n\nFourteen.\n",
    "legal/VendorContract.txt": "Section 4.2 Late payment\n\nFour percent per annum.\n",
    "hb.md": "# Operations Manual\n\n## 4.2 Start-up\n\nPress the green button.\n",
}


@pytest.mark.parametrize(
    ("query", "named"),
    [
        ("section 4.2 of the employee handbook", "employee-handbook.md"),
        ("Section 4.2 in the Security Policy", "security-policy.md"),
        ("what does § 4.2 of the vendor contract say?", "legal/VendorContract.txt"),
        ("operations manual, Sec. 4.2", "hb.md"),  # its title (the first heading) names it
        ("employee handbook 4.2", "employee-handbook.md"),  # a bare 4.2 of a named document
        ("4.2 in the security policy", "security-policy.md"),
    ],
)
def test_a_section_of_the_document_the_query_names_comes_first(query: str, named: str) -> None:
    # found 2026-12-07: every document's 4.2 scored 2.0, whichever the query named
    idx, ids = indexed(POLICIES)
    hits = idx.search(query, k=10)
    assert hits[0] == KeywordHit(ids[(named, "4.2")], 2.0)
    assert all(h.score < 2.0 for h in hits[1:])


def test_a_section_no_document_of_the_query_has_stays_every_documents() -> None:
    idx, ids = indexed(POLICIES)
    every = {i for (_, sid), i in ids.items() if sid == "4.2"}
    for query in ("Section 4.2", "section 4.2 of the handbook", "Section 4.2 of the lease"):
        assert {h.id for h in idx.search(query, k=10) if h.score == 2.0} == every, query
    assert idx.search("4.2", k=10) == []  # a bare number of no named document: no reference
    assert idx.search("the 4.2 percent rate of the lease", k=10) == []


def test_a_decimal_away_from_the_documents_name_is_no_section() -> None:
    """Found 2026-12-07 (a probe): "Does the security policy require TLS 1.2?" pinned the
    policy's 1.2 Definitions first: a bare number counted wherever the query named a document."""
    idx, ids = indexed(
        {"security-policy.md": "# Security Policy\n\n## 1.2 Definitions\n\nTerms.\n"}
    )
    for query in ("Does the security policy require TLS 1.2?", "TLS 1.2 security policy"):
        assert idx.search(query, k=10) == [], query
    for query in ("security policy 1.2", "1.2 in the security policy"):
        assert [h.id for h in idx.search(query, k=10)] == [ids[("security-policy.md", "1.2")]]


@pytest.mark.parametrize(
    ("query", "sections"),
    [
        ("employee handbook 4.2 and 4.3", ["4.2", "4.3"]),
        ("employee handbook 4.2, 4.3", ["4.2", "4.3"]),
        ("4.2 and 4.3 of the employee handbook", ["4.2", "4.3"]),
        ("the employee handbook's 4.2", ["4.2"]),
        ("employee-handbook.md 4.2", ["4.2"]),
        ("what does 4.2 of the employee handbook say", ["4.2"]),
        ("EmployeeHandbook 4.2", ["4.2"]),
    ],
)
def test_a_bare_number_at_the_documents_name_in_every_phrasing(
    query: str, sections: list[str]
) -> None:
    """Found 2026-12-07 (a probe of this pass's fixes): the first "at the name" rule compared
    the raw word before the number, so a possessive, a file name, camelCase, a list's second
    number and "4.2 of the employee handbook" lost the pin they had."""
    text = "# Employee Handbook\n\n## 4.1 Leave\n\nA.\n\n## 4.2 Sick\n\nB.\n\n## 4.3 Pay\n\nC.\n"
    idx, ids = indexed({"employee-handbook.md": text})
    hits = [h.id for h in idx.search(query, k=10) if h.score == 2.0]
    assert hits == [ids[("employee-handbook.md", s)] for s in sections], query


def test_a_name_inside_a_longer_one_gives_way() -> None:
    idx, ids = indexed({**POLICIES, "handbook.md": "## Section 4.2 Leave\n\nAsk.\n"})
    assert (
        idx.search("section 4.2 of the employee handbook", k=1)[0].id
        == ids[("employee-handbook.md", "4.2")]
    )
    assert idx.search("Section 4.2 of the handbook", k=1)[0].id == ids[("handbook.md", "4.2")]


def test_a_document_name_leaves_with_its_last_chunk() -> None:
    idx, ids = indexed(POLICIES)
    idx.delete([i for (path, _), i in ids.items() if path == "employee-handbook.md"])
    hits = idx.search("section 4.2 of the employee handbook", k=10)
    assert {h.id for h in hits if h.score == 2.0} == {
        i for (path, sid), i in ids.items() if sid == "4.2" and path != "employee-handbook.md"
    }
    assert idx.search("employee handbook 4.2", k=10) == []


LABELLED = {
    "lease.md": "# Lease\n\n## Section 4 Termination\n\nThree months' notice.\n",
    "agreement.md": "# Agreement\n\n## Article 2 Term\n\nTwo years.\n\n"
    "## Article 4 Fees\n\n(a) Monthly.\n\n(b) In euros.\n",
    "terms.md": "# Terms\n\n## 4. Termination\n\nAt any time.\n",
}


@pytest.mark.parametrize(
    ("query", "found"),
    [
        ("Section 4", {("lease.md", "4"), ("terms.md", "4")}),
        ("sec. 4", {("lease.md", "4"), ("terms.md", "4")}),
        ("4(a)", {("agreement.md", "4(a)")}),
        ("Article 4", {("agreement.md", "4(a)"), ("terms.md", "4")}),
        ("Clause 4", {("terms.md", "4")}),
        ("Article 2", {("agreement.md", "2")}),
        ("Section 2", set()),
        ("4(b)", {("agreement.md", "4(b)")}),  # no label word: any heading's
        ("Section 4(b)", set()),
        ("clause 4 or article 4", {("agreement.md", "4(a)"), ("terms.md", "4")}),
        (
            "articles 2 and 4 and section 4",
            {("agreement.md", "2"), ("agreement.md", "4(a)"), ("lease.md", "4"), ("terms.md", "4")},
        ),
    ],
)
def test_a_label_word_the_heading_does_not_use_is_no_exact_hit(query: str, found: set) -> None:
    # found 2026-12-07: "Article 4", in no document, pinned the lease's "Section 4" first
    idx, ids = indexed(LABELLED)
    pinned = {h.id for h in idx.search(query, k=10) if h.score == 2.0}
    assert pinned == {ids[key] for key in found}


def test_quoted_phrase_finds_chunks_containing_it(
    index: ExactMatchIndex, chunks: list[Document]
) -> None:
    by_sid = {c.metadata["section_id"]: c.id for c in chunks}
    hits = index.search('"arch controls"', k=5)
    assert [h.id for h in hits] == [by_sid["202(a)"]]
    hits = index.search('"SAFETY interlock"', k=5)
    assert {h.id for h in hits} == {by_sid["102(b)"], by_sid["201(a)"]}
    assert index.search('"warp core"', k=5) == []


def test_section_and_phrase_combine(index: ExactMatchIndex, chunks: list[Document]) -> None:
    by_sid = {c.metadata["section_id"]: c.id for c in chunks}
    hits = index.search('Section 203(a) "seven years"', k=5)
    assert hits[0].id == by_sid["203(a)(2)"]
    assert hits[0].score == 2.5


def test_phrase_uses_original_content_not_context() -> None:
    idx = ExactMatchIndex()
    idx.upsert(
        [
            Document(
                id="a",
                page_content="CONTEXT warp\n\nbody text",
                metadata={"original_content": "body text"},
            )
        ]
    )
    assert idx.search('"warp"', k=1) == []
    assert [h.id for h in idx.search('"body text"', k=1)] == ["a"]


def test_same_section_in_two_files(data_dir: Path) -> None:
    idx = ExactMatchIndex()
    idx.upsert(act_chunks(data_dir, "a.md") + act_chunks(data_dir, "b.md"))
    hits = idx.search("Section 101", k=5)
    assert [idx.section_of(h.id) for h in hits] == [("a.md", "101"), ("b.md", "101")]


def test_no_reference_no_hits(index: ExactMatchIndex) -> None:
    assert index.search("how long are logs kept", k=5) == []
    assert index.search("Section 999", k=5) == []
    assert index.search("", k=5) == []
    assert ExactMatchIndex().search("Section 101", k=3) == []


def test_k_cuts_and_is_validated(index: ExactMatchIndex) -> None:
    assert len(index.search("Section 203", k=2)) == 2
    with pytest.raises(ValueError, match="k must be a positive integer, got 0"):
        index.search("Section 203", k=0)


def test_upsert_moves_and_delete_removes(index: ExactMatchIndex, chunks: list[Document]) -> None:
    target = next(c for c in chunks if c.metadata["section_id"] == "201(a)")
    moved = target.model_copy(update={"metadata": {**target.metadata, "section_id": "301"}})
    index.upsert([moved])
    assert index.search("Section 201(a)", k=3) == []
    assert [h.id for h in index.search("Section 301", k=3)] == [target.id]
    index.delete([target.id, "unknown"])
    assert index.search("Section 301", k=3) == []
    assert target.id not in index


def test_structure_lookups(index: ExactMatchIndex, chunks: list[Document]) -> None:
    by_sid = {c.metadata["section_id"]: c.id for c in chunks}
    assert index.section_of(by_sid["201(b)"]) == (ACT, "201(b)")
    assert index.references_of(by_sid["201(b)"]) == ("202",)
    assert index.chunks_of_section(ACT, "202(a)") == [by_sid["202(a)"]]
    assert index.chunks_under_section(ACT, "202") == [by_sid["202(a)"], by_sid["202(b)"]]
    assert index.referrers_of(ACT, "201(a)") == [by_sid["202(b)"]]
    assert index.referrers_of("other.md", "201(a)") == []
    assert index.section_of("nope") is None


def test_idless_chunk_rejected() -> None:
    with pytest.raises(ValueError, match=r"ExactMatchIndex needs Document.id; doc 0"):
        ExactMatchIndex().upsert([Document(page_content="x")])


def test_rebuild_from_store(chunks: list[Document], embeddings) -> None:
    store = InMemoryVectorStore(embeddings)
    store.add_documents(chunks)
    idx = ExactMatchIndex()
    assert idx.rebuild_from_store(store) == len(chunks)
    assert idx.search("Section 202(a)", k=1)[0].id in {c.id for c in chunks}


def test_without_phrases_keeps_no_text(chunks: list[Document]) -> None:
    idx = ExactMatchIndex(phrases=False)
    idx.upsert(chunks)
    assert idx.search('"arch controls"', k=3) == []
    assert idx.search("Section 202", k=1)


def test_a_version_finds_the_changelog_entry_its_heading_names() -> None:
    """Found 2026-12-07: BM25's words drop one-character parts (``v2.3.1`` is ``v2``, ``2.3.1``
    nothing), so 'v2.3.1' ranked v2.3.0 and v2.1.4 above its own entry."""
    text = (
        "# Changelog\n\n## v2.3.1\n\n### Fixed\n\nA crash on empty input.\n\n"
        "## v2.3.0\n\nAdded export; see 2.3.1 for the crash.\n\n## v2.1.4\n\nFirst.\n"
    )
    docs = StructuredMarkdownSplitter().split_documents(
        [Document(page_content=text, metadata={"source_path": "CHANGELOG.md"})]
    )
    for n, doc in enumerate(docs):
        doc.id = f"c{n}"
    idx = ExactMatchIndex()
    idx.upsert(docs)
    texts = {d.id: d.page_content for d in docs}
    for query in ("v2.3.1", "what changed in 2.3.1", "V2.3.1?"):
        hits = idx.search(query, k=5)  # the entry (its heading opens the Fixed chunk), only
        assert [texts[h.id].splitlines()[2] for h in hits] == ["## v2.3.1"], query
    assert [texts[h.id] for h in idx.search("release v2.1.4", k=5)] == ["## v2.1.4\n\nFirst."]
    assert idx.search("4.2 percent", k=5) == []  # two bare numbers: no version
    assert parse_exact_query("upgrade to 2.3.1").versions == ("2.3.1",)


def test_a_bare_number_with_labels_finds_its_section_first(
    index: ExactMatchIndex, chunks: list[Document]
) -> None:
    own = {c.id for c in chunks if c.metadata["section_id"] == "203(a)(1)"}
    for query in ("203(a)(1)", "subsection (a)(1) of section 203"):
        top = index.search(query, k=3)
        assert top[0].id in own, query
        assert top[0].score == 2.0


def _indexed(texts: list[str]) -> ExactMatchIndex:
    idx = ExactMatchIndex()
    idx.upsert(
        [
            Document(id=f"d{n}", page_content=text, metadata={"source_path": f"f{n}.md"})
            for n, text in enumerate(texts)
        ]
    )
    return idx


def test_a_code_lookup_finds_the_chunks_holding_the_code() -> None:
    """Found 2026-12-07: a query that is an error code (``E1042``) ranked the only chunk
    holding it 4th under convex fusion: a dense model reads a code as noise."""
    idx = _indexed(
        [
            'return fmt.Errorf("E1042: worker pool exhausted")',
            "Workers crash when the pool is exhausted.",
            "ERR_CONN_RESET means the peer closed; see ORA-00942 and CVE-2021-44228.",
        ]
    )
    for query in ("E1042", "error E1042", "what is e1042?", "E1042 in the worker"):
        assert [h.id for h in idx.search(query, k=5)] == ["d0"], query
    assert [h.score for h in idx.search("E1042", k=5)] == [2.0]
    for query in ("ERR_CONN_RESET", "ora-00942", "CVE-2021-44228 fix"):
        assert [h.id for h in idx.search(query, k=5)] == ["d2"], query
    # in a longer question a code is a word among others, often incidental (a probe:
    # "how do I install the server on my 8GB laptop" pinned the one chunk saying 8GB)
    assert idx.search("why does my worker crash with E1042 at start", 5) == []


def test_a_code_many_chunks_hold_pins_nothing() -> None:
    idx = _indexed([f"step {n}: retry on E1042" for n in range(4)] + ["X2Y9 once", "X2Y9 twice"])
    assert idx.search("E1042", k=5) == []  # four chunks hold it: BM25 ranks them
    assert len(idx.search("X2Y9", k=5)) == 2  # a code lookup pins up to three
    assert idx.search("why does the build fail with X2Y9 on linux", k=5) == []  # a question


@pytest.mark.parametrize(
    ("text", "codes"),
    [
        ("E1042", ("e1042",)),
        ("0x8007000E and ORA-00942", ("0x8007000e", "ora-00942")),
        ("ERR_CONN_RESET", ("err_conn_reset",)),
        ("v2.3.1, H1, v2, 4.2, 2024-01-05, snake_case, CamelCase", ()),
        ("E1042.", ("e1042",)),
    ],
)
def test_codes_in(text: str, codes: tuple[str, ...]) -> None:
    assert codes_in(text) == codes


def test_a_version_titled_version_or_release_is_a_version() -> None:
    """Found 2026-12-07: Click, Flask and Jinja title their entries "Version 8.1"; 'v8.1' had
    no exact hit and another entry came first."""
    idx = ExactMatchIndex()
    text = "# Changes\n\n## Version 2.1\n\nFixed a crash.\n\n## Version 2.0\n\nRewrote it.\n"
    docs = StructuredMarkdownSplitter().split_documents(
        [Document(page_content=text, metadata={"source_path": "CHANGES.md"})]
    )
    for n, doc in enumerate(docs):
        doc.id = f"c{n}"
    idx.upsert(docs)
    texts = {d.id: d.page_content for d in docs}
    for query in ("v2.0", "Version 2.0", "what changed in release 2.0"):
        assert [texts[h.id].splitlines()[0] for h in idx.search(query, k=5)] == ["## Version 2.0"]
    assert versions_in("release notes of 4.2") == ()


def test_a_heading_that_is_a_number_alone_is_found_by_its_section() -> None:
    """Found 2026-12-07 (a probe): ``### 4.2`` with no title after the number had no section
    id, so 'section 4.2' found nothing of a contract numbering its clauses so."""
    text = (
        "# Service Agreement\n\n## 4\n\n### 4.1\n\nThe supplier delivers.\n\n"
        "### 4.2\n\nInvoices are payable within sixty days.\n\n### 4.3\n\nEither party.\n"
    )
    docs = StructuredMarkdownSplitter().split_documents(
        [Document(page_content=text, metadata={"source_path": "contract.md"})]
    )
    for n, doc in enumerate(docs):
        doc.id = f"c{n}"
    idx = ExactMatchIndex()
    idx.upsert(docs)
    texts = {d.id: d.page_content for d in docs}
    assert [texts[h.id] for h in idx.search("section 4.2", k=5)] == [
        "### 4.2\n\nInvoices are payable within sixty days."
    ]
    assert [texts[h.id].splitlines()[2] for h in idx.search("Section 4", k=5)] == ["## 4"]

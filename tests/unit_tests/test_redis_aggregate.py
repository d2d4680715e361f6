"""The native Redis aggregate: KNN candidates ranked first, fields loaded for the rows returned."""

from __future__ import annotations

import pytest

pytest.importorskip("redisvl")

from langchain_holodeck.vectorstores._redis_aggregate import LateLoadHybridQuery

LEGS = {
    "text": "safety protocols",
    "text_field_name": "text",
    "vector": [0.1, 0.2, 0.3],
    "vector_field_name": "embedding",
    "text_scorer": "BM25STD",
    "stopwords": None,
}


def test_fields_are_loaded_after_the_rows_are_ranked_and_cut() -> None:
    args = LateLoadHybridQuery(**LEGS, load_fields=["__key", "text"], num_results=300, limit=10)
    assert "KNN 300 @embedding" in args.build_args()[0]
    rest = [str(a) for a in args.build_args()]
    assert rest.count("LOAD") == 1
    assert rest.index("SORTBY") < rest.index("LIMIT") < rest.index("LOAD")
    assert rest[rest.index("LIMIT") : rest.index("LIMIT") + 3] == ["LIMIT", "0", "10"]
    assert rest[rest.index("LOAD") :] == ["LOAD", "2", "@__key", "@text"]


def test_without_a_limit_every_candidate_is_returned() -> None:
    args = [
        str(a)
        for a in LateLoadHybridQuery(
            **LEGS, load_fields=["__key"], num_results=50, limit=None
        ).build_args()
    ]
    assert "LIMIT" not in args
    assert args[-3:] == ["LOAD", "1", "@__key"]


def test_return_fields_are_refused_with_the_fix() -> None:
    with pytest.raises(TypeError, match="pass the fields as load_fields"):
        LateLoadHybridQuery(**LEGS, return_fields=["text"], load_fields=[], limit=None)


def test_reply_rows_reads_resp2_and_resp3_replies() -> None:
    from langchain_holodeck.vectorstores._redis_convex import reply_rows

    knn2 = [3, b"idx:a", b"#0.25", b"idx:b:w1", b"#0.5", b"idx:d", None]  # WITHSORTKEYS
    text2 = [2, b"idx:a", b"3.5", b"idx:c", b"1.25"]
    assert reply_rows(knn2) == [("idx:a", 0.25), ("idx:b:w1", 0.5), ("idx:d", 2.0)]
    assert reply_rows(text2) == [("idx:a", 3.5), ("idx:c", 1.25)]
    assert reply_rows([0]) == []
    knn3 = {b"results": [{b"id": b"idx:a", b"sortkey": b"#0.29623574018478394", b"values": []}]}
    text3 = {"results": [{"id": "idx:a", "score": 3.5}, {"id": "idx:c", "score": 1.25}]}
    assert reply_rows(knn3) == [("idx:a", 0.29623574018478394)]
    assert reply_rows(text3) == [("idx:a", 3.5), ("idx:c", 1.25)]
    assert reply_rows({b"results": []}) == []


def test_match_any_intersects_each_term_with_an_unscored_scope() -> None:
    from langchain_holodeck._redisearch import match_any, unscored

    assert match_any("text", ["ncc", "1289"]) == "@text:(ncc | 1289)"
    scope = f"{unscored('@namespace:{kb}')} -@chunk_type:{{window}}"
    assert scope == "-(-(@namespace:{kb})) -@chunk_type:{window}"
    assert match_any("text", ["ncc", "1289"], scope) == (
        f"(@text:ncc {scope}) | (@text:1289 {scope})"
    )


def test_a_text_clause_and_scope_replace_redisvls_text_and_filter() -> None:
    query = LateLoadHybridQuery(
        **LEGS,
        text_clause="(@text:safety -(-(@ns:{a}))) | (@text:protocols -(-(@ns:{a})))",
        scope="-(-(@ns:{a}))",
        load_fields=["__key"],
        num_results=30,
        limit=5,
    )
    assert str(query.build_args()[0]) == (
        "(~((@text:safety -(-(@ns:{a}))) | (@text:protocols -(-(@ns:{a})))) -(-(@ns:{a})))"
        "=>[KNN 30 @embedding $vector AS vector_distance]"
    )
    unscoped = LateLoadHybridQuery(
        **LEGS, text_clause="@text:(safety | protocols)", load_fields=["__key"], num_results=30,
        limit=5,
    )  # fmt: skip
    assert str(unscoped.build_args()[0]).startswith("(~(@text:(safety | protocols)))=>[KNN 30 ")


def test_identifier_parts_are_the_words_redisearch_does_not_split() -> None:
    from langchain_holodeck._redisearch import identifier_parts

    text = "| ISO4217-currency_name | getUser(HTTPServer) | parse_sections | x_y | getUser |"
    assert identifier_parts(text) == "currency name get user http server parse sections"
    assert identifier_parts("Plain words, dotted.names and 3.5 give none.") == ""


@pytest.mark.parametrize(
    ("given", "escaped"),
    [
        ("@namespace:{837b770f-1f2a}", r"@namespace:{837b770f\-1f2a}"),
        ("@source_path:{docs1/alpha.md}", r"@source_path:{docs1\/alpha\.md}"),
        ("(@a:{kb} | @b:{x|y:z}) -@c:{w}", r"@b:{x|y\:z}"),
        ("@a:{x\\-1} @b:{mail@host}", r"@b:{mail\@host}"),
    ],
)
def test_an_unescaped_tag_value_is_found_and_shown_escaped(given: str, escaped: str) -> None:
    """RediSearch reads ``-``, ``/``, ``.``, ... in a TAG value as syntax: nothing matched, or
    a syntax error (late probe, 2026-12-07)."""
    from langchain_holodeck._redisearch import unescaped_tag_clause

    found = unescaped_tag_clause(given)
    assert found is not None
    assert found[1] == escaped
    assert unescaped_tag_clause(escaped) is None


@pytest.mark.parametrize(
    "given",
    [
        "@namespace:{kb}",
        r"@namespace:{837b770f\-1f2a} @path:{docs\/a\.md}",
        "@a:{doc*} @b:{$ns} @c:{w'x-*'} @d:{two words|x}",
        "@chunk_index:[0 3] @title:(a-b) -@chunk_type:{window}",
        "*",
    ],
)
def test_escaped_tag_values_wildcards_and_other_clauses_pass(given: str) -> None:
    from langchain_holodeck._redisearch import unescaped_tag_clause

    assert unescaped_tag_clause(given) is None

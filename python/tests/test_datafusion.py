"""tokq.register: tokq's functions on a stock datafusion SessionContext (the PyPI package)."""

from __future__ import annotations

import pytest

import tokq

datafusion = pytest.importorskip("datafusion")


@pytest.fixture(scope="module")
def ctx():
    c = datafusion.SessionContext()
    names = tokq.register(c)
    assert {"token_count", "quality_chain", "minhash", "read_jsonl"} <= set(names)
    return c


def test_token_count_runs_in_a_stock_context(ctx):
    got = ctx.sql("SELECT token_count('Hello world, hello tokq!', 'tiktoken:cl100k_base') AS n").to_pydict()
    want = tokq.sql("SELECT token_count('Hello world, hello tokq!', 'tiktoken:cl100k_base') AS n").to_pydict()
    assert got == want and got["n"][0] > 3


def test_quality_chain_decides_as_tokq_does_on_wikipedia(ctx, shared):
    """FineWeb's cascade through the FFI gives tokq's own verdicts, text and reason alike."""
    wiki = shared / "corpora/wikipedia-en-2015/wiki_en_2015_sample.jsonl.gz"
    query = (f"SELECT _row, quality_chain(text, 'fineweb') AS v FROM read_jsonl('{wiki}') "
             "ORDER BY _row LIMIT 400")
    got, want = ctx.sql(query).to_pydict(), tokq.sql(query).to_pydict()
    assert got == want
    reasons = {v["filter_reason"] for v in got["v"]}
    assert None in reasons and len(reasons) > 1  # some kept, some dropped


def test_a_table_function_reads_through_the_ffi(ctx, tmp_path):
    (tmp_path / "a.jsonl").write_text('{"text": "one two"}\n{"text": "three"}\n')
    got = ctx.sql(f"SELECT text, _row, token_count(text, 'tiktoken:cl100k_base') AS n FROM read_jsonl('{tmp_path}/a.jsonl') ORDER BY _row").to_pydict()
    assert got == {"text": ["one two", "three"], "_row": [0, 1], "n": [2, 1]}


def test_a_bloom_filter_tokq_wrote_is_read_in_a_stock_context(ctx, tmp_path):
    """bloom_counts runs in tokq (an aggregate); its file is probed through the FFI, where no
    planning pins the file's version, so each batch checks it: a rewrite is seen."""
    f = tmp_path / "filter.parquet"
    # 1,000 hashes once, then the same path rewritten with 0..499 twice.
    for n, want in ((1000, 1), (1500, 2)):
        tokq.sql(f"COPY (SELECT bloom_counts(arrow_cast(v % 1000, 'UInt64'), 2000) AS filter "
                 f"FROM unnest(range({n})) AS t(v)) TO '{f}' STORED AS PARQUET OPTIONS ('overwrite' 'true')")
        got = ctx.sql(f"SELECT min(bloom_count(arrow_cast(v, 'UInt64'), '{f}')) AS c FROM unnest(range(500)) AS t(v)").to_pydict()
        assert got["c"][0] == want

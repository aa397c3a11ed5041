"""tokq.sql: tokq's functions from Python, results as pyarrow without copies."""

from __future__ import annotations

import threading
import time

import pyarrow as pa
import pytest

import tokq

WIKI = "corpora/wikipedia-en-2015/wiki_en_2015_sample.jsonl.gz"


@pytest.mark.parametrize("tokenizer", ["gpt2", "llama3"])
def test_ids_equal_hf_tokenizers_on_the_shared_corpora(shared, tokenizer):
    from tokenizers import Tokenizer

    path = shared / "tokenizers" / tokenizer / "tokenizer.json"
    table = tokq.sql(
        "SELECT text, tokenize(text, '${tok}') AS ids FROM read_jsonl('${wiki}') ORDER BY _row LIMIT 300",
        {"tok": path, "wiki": shared / WIKI},
    )
    assert table.num_rows == 300
    texts = table.column("text").to_pylist()
    want = [e.ids for e in Tokenizer.from_file(str(path)).encode_batch(texts, add_special_tokens=False)]
    assert table.column("ids").to_pylist() == want


def test_several_statements_return_the_last_ones_rows():
    t = tokq.sql("CREATE VIEW v AS SELECT * FROM (VALUES (1, 'a b c'), (2, 'd')) AS t(n, s); "
                 "SELECT n, token_count(s, 'tiktoken:cl100k_base') AS k FROM v ORDER BY n")
    assert t.to_pydict() == {"n": [1, 2], "k": [3, 1]}
    assert tokq.sql("CREATE VIEW w AS SELECT 1 AS x").num_rows == 0


def test_the_result_is_not_copied_into_python():
    """pyarrow counts what its own pool allocates; buffers handed over by tokq are not in it,
    so a 100 MB result leaves the pool as it was. A copy would show up there."""
    before = pa.total_allocated_bytes()
    # ORDER BY: with several partitions the rows come in any order.
    t = tokq.sql("SELECT repeat('x', 1000) || CAST(value AS VARCHAR) AS s FROM generate_series(1, 100000) ORDER BY value")
    assert t.nbytes > 100_000_000
    assert pa.total_allocated_bytes() - before < 1_000_000
    # And the memory is really tokq's: it stays valid after the call's context is gone.
    assert t.column("s")[99_999].as_py() == "x" * 1000 + "100000"


def test_stream_returns_batches_as_they_are_computed():
    reader = tokq.sql("SELECT value FROM generate_series(1, 1000000)", stream=True)
    assert isinstance(reader, pa.RecordBatchReader)
    sizes = [b.num_rows for b in reader]
    assert len(sizes) > 1 and sum(sizes) == 1_000_000


def _ticks_during(rows):
    """Seconds one minhash query over `rows` documents took, and how often this thread woke
    meanwhile (every millisecond if tokq lets go of the GIL, hardly ever if it holds it)."""
    done = threading.Event()
    failed = []

    def work():
        try:
            tokq.sql("SELECT count(minhash(repeat('lorem ipsum dolor ', 200) || value, 112, 5, 1)) "
                     f"FROM generate_series(1, {rows})")
        except Exception as e:  # raised again below, on the test's thread
            failed.append(e)
        finally:
            done.set()

    worker = threading.Thread(target=work)
    start = time.perf_counter()
    worker.start()
    ticks = 0
    while not done.is_set():
        ticks += 1
        time.sleep(0.001)
    worker.join()
    assert not failed, failed
    return time.perf_counter() - start, ticks


def test_the_gil_is_released_while_tokq_works():
    # The query has to last long enough to tell; how long a size takes depends on the machine
    # (CI once finished 30,000 documents in 0.29 s), so the size grows until one does.
    for rows in (30_000, 120_000, 480_000, 1_920_000):
        seconds, ticks = _ticks_during(rows)
        if seconds > 0.3:
            assert ticks > 100  # with the GIL held, this thread would not have run at all
            return
    pytest.fail(f"even {rows} documents took only {seconds:.2f} s: too soon to tell")


def test_errors_are_tokq_exceptions_with_one_line():
    with pytest.raises(tokq.RecipeError, match=r"\$\{nope\}"):
        tokq.sql("SELECT '${nope}'")
    with pytest.raises(tokq.StatementError) as e:
        tokq.sql("SELECT 1;\nSELECT * FROM read_jsonl('/no/such/dir/*.jsonl')")
    assert (e.value.file, e.value.line, e.value.statement) == ("<sql>", 2, 2)
    assert "\n" not in str(e.value) and "/no/such/dir" in str(e.value)
    assert isinstance(e.value, tokq.TokqError)
    with pytest.raises(tokq.StatementError, match="tokenizer"):
        tokq.sql("SELECT tokenize('x', 'no-such-tokenizer.json')")


def test_a_python_udf_inside_a_streamed_query():
    import pyarrow.compute as pc

    @tokq.udf(pa.int64(), name="twice")
    def twice(x: pa.Array) -> pa.Array:
        return pc.multiply(x, 2)

    reader = tokq.sql("SELECT twice(value) AS v FROM generate_series(1, 100000)", stream=True)
    assert sum(pc.sum(b.column(0)).as_py() for b in reader) == 2 * sum(range(1, 100_001))


def test_a_python_udf_result_takes_its_declared_layout_or_fails_naming_the_udf():
    @tokq.udf(pa.string(), name="same")
    def same(x: pa.Array) -> pa.Array:
        return x  # DataFusion's strings are string_view: cast to the declared string

    t = tokq.sql("SELECT same(CAST(value AS VARCHAR)) AS s FROM generate_series(1, 3)")
    assert t.schema.field("s").type == pa.string() and t.column("s").to_pylist() == ["1", "2", "3"]

    @tokq.udf(pa.int8(), name="too_big")
    def too_big(x: pa.Array) -> pa.Array:
        return pa.array([1000] * len(x))

    with pytest.raises(tokq.StatementError, match="Python UDF 'too_big' returned Int64 but was registered with return_type Int8"):
        tokq.sql("SELECT too_big(value) FROM generate_series(1, 3)")

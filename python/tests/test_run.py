"""tokq.run and Python UDFs: recipes from Python, progress, Ctrl-C, the tokq command."""

from __future__ import annotations

import json
import os
import pathlib
import random
import shutil
import signal
import subprocess
import sys
import threading
import time

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

import tokq


@tokq.udf(pa.string())
def shout(texts: pa.Array) -> pa.Array:
    return pc.utf8_upper(texts)


@tokq.udf(pa.int64(), name="vowels")
def count_vowels(texts: pa.Array) -> list[int]:
    return [sum(c in "aeiou" for c in t) for t in texts.to_pylist()]


def write_docs(folder: pathlib.Path, files: int, docs: int, words: int = 40) -> pathlib.Path:
    rng = random.Random(7)
    vocab = [("".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(rng.randint(2, 9)))) for _ in range(3000)]
    folder.mkdir(parents=True, exist_ok=True)
    for f in range(files):
        with open(folder / f"part-{f:03}.jsonl", "w") as out:
            for i in range(docs):
                text = " ".join(rng.choice(vocab) for _ in range(words)) + "."
                out.write(json.dumps({"id": f"{f}-{i}", "text": text}) + "\n")
    return folder


RECIPE = """PARAMETERS (input path, out folder, rejects folder, minimum integer DEFAULT 3);
CREATE VIEW docs AS SELECT id, text, shout(text) AS loud, vowels(text) AS n_vowels, _source, _row
  FROM read_jsonl('${input}');
COPY (SELECT id, loud, n_vowels, tokenize(text, 'tiktoken:cl100k_base') AS input_ids, _source, _row,
             CASE WHEN n_vowels < ${minimum} THEN 'vowels:too_few' END AS filter_reason
      FROM docs)
  TO '${out}' STORED AS PARQUET OPTIONS ('rejects' '${rejects}');
"""


def test_a_python_udf_runs_inside_a_recipe_run_by_tokq_run(tmp_path):
    docs = write_docs(tmp_path / "in", files=2, docs=50, words=3)
    recipe = tmp_path / "udf.sql"
    recipe.write_text(RECIPE)
    seen = []
    stats = tokq.run(recipe, {"input": f"{docs}/*.jsonl", "out": tmp_path / "out", "rejects": tmp_path / "rejects", "minimum": 4},
                     partitions=2, progress=lambda *p: seen.append(p))
    out = pq.read_table(tmp_path / "out", columns=["id", "loud", "n_vowels"]).to_pylist()
    texts = {}
    for f in sorted(docs.glob("*.jsonl")):
        for line in f.read_text().splitlines():
            d = json.loads(line)
            texts[d["id"]] = d["text"]
    want = {i: t for i, t in texts.items() if sum(c in "aeiou" for c in t) >= 4}
    assert {r["id"] for r in out} == set(want) and 0 < len(want) < 100
    rejected = pq.read_table(tmp_path / "rejects", columns=["filter_reason"]).column(0).to_pylist()
    assert rejected == ["vowels:too_few"] * (100 - len(want))
    assert all(r["loud"] == want[r["id"]].upper() for r in out)
    assert all(r["n_vowels"] == sum(c in "aeiou" for c in want[r["id"]]) for r in out)
    (acc,) = stats["accounting"]
    assert acc["input_rows"] == 100 and acc["kept"] + acc["rejected"] == 100
    assert stats["outputs"][0]["rows"] == len(want)
    # A run shorter than the half-second between reports still reports each statement's end.
    (last,) = [p for p in seen if p[0].startswith("statement 2/2: COPY")][-1:]
    assert last[3] == 100 and last[1] > 0, seen


def test_a_python_udf_is_refused_on_a_cluster_in_one_line(tmp_path):
    recipe = tmp_path / "udf.sql"
    recipe.write_text(RECIPE)
    with pytest.raises(tokq.ClusterError, match=r"udf.sql:2: calls the Python UDF 'shout'.*cluster=None"):
        tokq.run(recipe, {"input": "x", "out": tmp_path / "o", "rejects": tmp_path / "r"}, cluster="df://127.0.0.1:9")


def test_a_python_udf_returning_the_wrong_thing_names_itself(tmp_path):
    @tokq.udf(pa.int64(), name="short")
    def short(texts: pa.Array) -> pa.Array:
        return pa.array([1])

    with pytest.raises(tokq.StatementError, match="Python UDF 'short' returned 1 values for a batch of 3 rows"):
        tokq.sql("SELECT short(s) FROM (VALUES ('a'), ('b'), ('c')) AS t(s)")


def test_a_failed_statement_carries_the_stats_of_what_ran(tmp_path):
    recipe = tmp_path / "bad.sql"
    recipe.write_text("SELECT 1;\n\nSELECT * FROM read_jsonl('/no/such/*.jsonl');\n")
    with pytest.raises(tokq.StatementError) as e:
        tokq.run(recipe, progress=False)
    assert e.value.line == 3 and e.value.stats["error"] == str(e.value)
    assert [s["number"] for s in e.value.stats["statements"]] == [1, 2]
    with pytest.raises(ValueError, match="on_bad_row"):
        tokq.run(recipe, on_bad_row="ignore")
    with pytest.raises(tokq.TokqError, match="cannot read recipe"):
        tokq.run(tmp_path / "missing.sql")


BIG = """COPY (SELECT id, minhash(text, 112, 5, 1) AS sig, tokenize(text, 'tiktoken:cl100k_base') AS input_ids, _source, _row
      FROM read_jsonl('${input}'))
  TO '${out}' STORED AS PARQUET;
"""


def visible_parquet(folder: pathlib.Path) -> list[pathlib.Path]:
    return sorted(p for p in folder.rglob("*.parquet") if not any(part.startswith(".") for part in p.relative_to(folder).parts))


def test_ctrl_c_stops_a_run_with_nothing_half_written_and_a_rerun_completes(tmp_path):
    docs = write_docs(tmp_path / "in", files=24, docs=6000, words=200)
    recipe = tmp_path / "big.sql"
    recipe.write_text(BIG)
    params = {"input": f"{docs}/*.jsonl", "out": tmp_path / "out/"}
    timer = threading.Timer(0.5, lambda: os.kill(os.getpid(), signal.SIGINT))
    start = time.perf_counter()
    timer.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            tokq.run(recipe, params, partitions=2, progress=False)
    finally:
        timer.cancel()
    stopped = time.perf_counter() - start
    out = tmp_path / "out"
    assert not (out / "_tokq_manifest.parquet").exists()
    for f in visible_parquet(out):
        pq.read_metadata(f)  # every visible file is whole
    with pytest.raises(tokq.TokqFormatError):
        tokq.open_output(str(out))
    assert stopped < 2.0, f"KeyboardInterrupt came {stopped - 0.5:.1f} s after Ctrl-C"
    seen = []
    stats = tokq.run(recipe, params, partitions=2, progress=lambda *p: seen.append(p))
    assert stats["outputs"][0]["rows"] == 24 * 6000
    assert tokq.open_output(str(out)).manifest is not None
    assert seen and seen[-1][0].startswith("statement 1/1: COPY") and max(p[1] for p in seen) > 0


def tokq_command() -> str:
    found = shutil.which("tokq", path=os.path.dirname(sys.executable))
    assert found, "pip install ./python installs the tokq command beside python"
    return found


def test_the_tokq_command_comes_with_the_package(tmp_path):
    cmd = tokq_command()
    listed = subprocess.run([cmd, "functions"], capture_output=True, text=True, check=True).stdout
    assert "token_count(" in listed and "read_warc(" in listed
    rows = subprocess.run([cmd, "sql", "-c", "SELECT token_count('hello world', 'tiktoken:cl100k_base') AS n", "--format", "csv"],
                          capture_output=True, text=True, check=True).stdout
    assert rows == "n\n2\n"
    bad = subprocess.run([cmd, "run", str(tmp_path / "missing.sql")], capture_output=True, text=True)
    assert bad.returncode == 1 and bad.stderr.count("\n") == 1 and bad.stderr.startswith("tokq: cannot read recipe")
    assert subprocess.run([cmd, "--version"], capture_output=True, text=True, check=True).stdout.startswith("tokq ")


COUNT = """COPY (SELECT id, text, _source, _row FROM read_jsonl('${input}')) TO '${out}' STORED AS PARQUET;
"""


def test_two_runs_at_once_in_one_process_each_count_their_own_reads(tmp_path):
    small = write_docs(tmp_path / "small", files=1, docs=300)
    large = write_docs(tmp_path / "large", files=3, docs=2000)
    recipe = tmp_path / "count.sql"
    recipe.write_text(COUNT)
    results: dict[str, dict] = {}

    def run(name: str, docs: pathlib.Path) -> None:
        results[name] = tokq.run(recipe, {"input": f"{docs}/*.jsonl", "out": tmp_path / f"out-{name}/"}, partitions=2, progress=False)

    threads = [threading.Thread(target=run, args=(n, d)) for n, d in (("small", small), ("large", large))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for name, docs, rows in (("small", small, 300), ("large", large, 6000)):
        stats = results[name]
        size = sum(f.stat().st_size for f in docs.glob("*.jsonl"))
        assert (stats["rows_read"], stats["documents_read"], stats["bytes_read"]) == (rows, rows, size), (name, stats)
        assert sum(s["rows"] for s in stats["sources"].values()) == rows

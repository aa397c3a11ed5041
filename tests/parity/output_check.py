"""Every shipped recipe's output folders open as they are in DuckDB, Polars, pyarrow and Hugging Face
`datasets`, each in its idiomatic form, and agree with the manifest; the footers carry tokq's
metadata and the outputs keep lineage.

    python tests/parity/output_check.py --tokq PATH --shared ../shared --out DIR

Runs every recipe in queries/ (models and lists from the environment CI sets: TOKQ_TEST_LID176,
TOKQ_TEST_DATATROVE_ASSETS, TOKQ_TEST_PSL, TOKQ_TEST_EDU_MODEL, the one-logit model the model
parity leaves; a fastText quality model is trained here), then opens
every folder a recipe's COPY wrote, and a one-file output (`output=x.parquet`).
"""
import argparse, glob, json, os, subprocess, sys

import duckdb
import polars as pl
import pyarrow as pa
import pyarrow.dataset as ds
import pyarrow.parquet as pq

os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
import datasets  # noqa: E402  (after the offline switch)

datasets.disable_progress_bars()
datasets.logging.set_verbosity_error()

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# DuckDB reads BYTE_STREAM_SPLIT integers from 2.0 on (duckdb/duckdb#24175).
DUCKDB_READS_SPLIT_INTEGERS = int(duckdb.__version__.split(".")[0]) >= 2


def quality_model(shared, work):
    """A small fastText classifier with the labels dclm.sql asks for, trained on 2,000 Wikipedia
    articles (the bundled sample is too small: fastText's training hits NaN on it now and then)."""
    import fasttext, gzip, itertools

    train = os.path.join(work, "quality.train")
    with gzip.open(os.path.join(shared, "corpora/wikipedia-en-2015/wiki_en_2015_sample.jsonl.gz"), "rt") as src, \
            open(train, "w") as f:
        for i, line in enumerate(itertools.islice(src, 2000)):
            text = json.loads(line)["text"].replace("\n", " ")
            f.write(f"__label__{'hq' if i % 2 else 'cc'} {text}\n")
    model = os.path.join(work, "quality.bin")
    fasttext.train_supervised(input=train, epoch=3, dim=16, bucket=200_000, thread=1, seed=1, verbose=0, loss="ova").save_model(model)
    return model


def recipes(shared, work):
    """(recipe, its --set parameters) for every recipe in queries/, outputs under work/."""
    lid = os.environ["TOKQ_TEST_LID176"]
    assets = os.environ["TOKQ_TEST_DATATROVE_ASSETS"]
    web = {"input": os.path.join(shared, "corpora/web-html/trafilatura-eval.warc.gz"), "lid_model": lid,
           "url_lists": assets, "psl": os.environ["TOKQ_TEST_PSL"]}
    extra = {"fineweb-lid": {"lid_model": lid}, "fineweb2-lid": {"lid_model": lid},
             "dclm": {"quality_model": quality_model(shared, work)}, "fineweb-cc": web,
             "fineweb-edu": {"edu_model": os.environ["TOKQ_TEST_EDU_MODEL"]}}
    extra["nemotron-cc"] = {**extra["dclm"], **extra["fineweb-edu"]}
    found = sorted(glob.glob(os.path.join(REPO, "queries/*.sql")))
    assert found, "no recipes in queries/"
    for path in found:
        name = os.path.basename(path)[:-4]
        params = {"output": f"{work}/{name}/", **extra.get(name, {})}
        text = open(path).read()
        for key in ("rejects", "work"):
            if "${" + key in text:
                params[key] = f"{work}/{name}-{key}/"
        yield path, params


def written_folders(work):
    return sorted(os.path.dirname(m) for m in glob.glob(os.path.join(work, "**/_tokq_manifest.parquet"), recursive=True))


def manifest_of(folder):
    return json.loads(pq.ParquetFile(os.path.join(folder, "_tokq_manifest.parquet")).metadata.metadata[b"tokq.manifest"])


def check(folder):
    m = manifest_of(folder)
    rows = m["rows"]
    parts = sorted(os.path.basename(p) for p in glob.glob(os.path.join(folder, "part-*.parquet")))
    assert [f["path"] for f in m["files"]] == parts, (folder, m["files"], parts)
    counts = {
        "duckdb 'dir/*'": duckdb.sql(f"SELECT count(*) FROM read_parquet('{folder}/*')").fetchone()[0],
        "duckdb 'dir/**'": duckdb.sql(f"SELECT count(*) FROM read_parquet('{folder}/**')").fetchone()[0],
        "duckdb 'dir/*.parquet'": duckdb.sql(f"SELECT count(*) FROM '{folder}/*.parquet'").fetchone()[0],
        "polars scan_parquet('dir/')": pl.scan_parquet(folder + "/").select(pl.len()).collect().item(),
        "pyarrow dataset": ds.dataset(folder, format="parquet").count_rows(),
        "pyarrow read_table": pq.read_table(folder).num_rows,
    }
    # datasets cannot make a split of no rows ("corresponds to no data"), from any files.
    if rows:
        counts["datasets load_dataset(dir)"] = datasets.load_dataset(folder, split="train").num_rows
        counts["datasets data_files 'dir/*'"] = datasets.load_dataset("parquet", data_files=folder + "/*", split="train").num_rows
    wrong = {k: v for k, v in counts.items() if v != rows}
    assert not wrong, f"{folder}: the manifest has {rows} rows, these readers disagree: {wrong}"
    for part in parts:
        meta = {k.decode(): v.decode() for k, v in pq.ParquetFile(os.path.join(folder, part)).metadata.metadata.items()}
        for key in ("tokq.format_version", "tokq.tokenizer", "tokq.recipe_sha256", "tokq.version"):
            assert key in meta, (folder, part, key)
    return rows


def check_tokens(folder):
    """Token ids and their counts agree between pyarrow, DuckDB and the manifest."""
    m = manifest_of(folder)
    table = pq.read_table(folder)
    assert table.schema.field("input_ids").type == pa.list_(pa.field("item", pa.uint32(), nullable=False)), table.schema
    for col in ("doc_id", "_source", "_row"):
        assert col in table.column_names, (folder, col)
    tokens, lens = duckdb.sql(f"SELECT sum(n_tokens), sum(len(input_ids)) FROM read_parquet('{folder}/*')").fetchone()
    assert tokens == lens == m["tokens"], (tokens, lens, m["tokens"])
    tok = json.loads(pq.ParquetFile(os.path.join(folder, m["files"][0]["path"])).metadata.metadata[b"tokq.tokenizer"])
    assert tok and all(len(t["sha256"]) == 64 for t in tok), tok


def check_single_file(tokq, work):
    """`COPY ... TO 'x.parquet'` writes one file, which each reader opens by its name."""
    path = os.path.join(work, "single", "quickstart.parquet")
    subprocess.run([tokq, "run", "queries/quickstart.sql", "--quiet", "--set", f"output={path}"], cwd=REPO, check=True,
                   stdout=subprocess.DEVNULL)
    assert os.listdir(os.path.dirname(path)) == ["quickstart.parquet"], os.listdir(os.path.dirname(path))
    meta = pq.ParquetFile(path).metadata.metadata
    rows = json.loads(meta[b"tokq.manifest"])["rows"]
    assert b"tokq.tokenizer" in meta and b"tokq.recipe_sha256" in meta, meta.keys()
    counts = {
        "duckdb": duckdb.sql(f"SELECT count(*) FROM read_parquet('{path}')").fetchone()[0],
        "polars": pl.scan_parquet(path).select(pl.len()).collect().item(),
        "pyarrow": pq.read_table(path).num_rows,
        "datasets": datasets.load_dataset("parquet", data_files=path, split="train").num_rows,
    }
    wrong = {k: v for k, v in counts.items() if v != rows}
    assert not wrong, f"{path}: the manifest has {rows} rows, these readers disagree: {wrong}"
    return rows


def check_byte_streams(tokq, work):
    """`'ids_encoding' 'byte_stream_split'`: pyarrow, Polars and datasets read the same ids as from
    the default plain ids; DuckDB reads them from 2.0 and refuses them, naming the encoding, before."""
    recipe = os.path.join(work, "byte-streams.sql")
    copy = ("COPY (SELECT _source, _row, tokenize(text, 'tiktoken:o200k_base') AS input_ids FROM "
            "read_jsonl('queries/data/sample.jsonl')) TO '{}' STORED AS PARQUET {};\n")
    plain, split = os.path.join(work, "ids-plain"), os.path.join(work, "ids-split")
    with open(recipe, "w") as f:
        f.write(copy.format(plain + "/", "") + copy.format(split + "/", "OPTIONS ('ids_encoding' 'byte_stream_split')"))
    subprocess.run([tokq, "run", recipe, "--quiet", "--partitions", "1"], cwd=REPO, check=True, stdout=subprocess.DEVNULL)
    part = os.path.join(split, manifest_of(split)["files"][0]["path"])
    encodings = pq.ParquetFile(part).metadata.row_group(0).column(2).encodings
    assert "BYTE_STREAM_SPLIT" in encodings, encodings

    def ids(folder):
        return {
            "pyarrow": pq.read_table(folder).sort_by("_row").column("input_ids").to_pylist(),
            "polars": pl.read_parquet(folder + "/*.parquet").sort("_row")["input_ids"].to_list(),
            "datasets": datasets.load_dataset(folder, split="train").sort("_row")["input_ids"],
        }
    want = ids(plain)["pyarrow"]
    wrong = [reader for reader, got in ids(split).items() if got != want]
    assert not wrong, f"{split}: these readers read other ids than the plain file's: {wrong}"
    if DUCKDB_READS_SPLIT_INTEGERS:
        got = [list(r[0]) for r in duckdb.sql(f"SELECT input_ids FROM read_parquet('{split}/*') ORDER BY _row").fetchall()]
        assert got == want, "DuckDB read other ids"
    else:
        try:
            duckdb.sql(f"SELECT sum(len(input_ids)) FROM read_parquet('{split}/*')").fetchall()
            raise AssertionError(f"DuckDB {duckdb.__version__} read BYTE_STREAM_SPLIT ids: docs/output-format.md says it cannot")
        except duckdb.Error as e:
            assert "BYTE_STREAM_SPLIT" in str(e), e
    return len(want)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tokq", required=True)
    ap.add_argument("--shared", required=True)
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    for path, params in recipes(os.path.abspath(a.shared), a.out):
        sets = [x for k, v in params.items() for x in ("--set", f"{k}={v}")]
        subprocess.run([a.tokq, "run", path, "--quiet", *sets], cwd=REPO, check=True, stdout=subprocess.DEVNULL)
    folders = written_folders(a.out)
    rel = {os.path.relpath(f, a.out) for f in folders}
    missing = {"quickstart", "pipeline", "pipeline-rejects", "pack", "dedup", "dedup-rejects", "dedup-work/signed",
               "fineweb-cc", "fineweb-cc-rejects", "dclm", "fineweb2-lid", "pretrain", "pretrain-work/filtered",
               "pretrain-work/unique", "pretrain-rejects/quality", "pretrain-rejects/dedup"} - rel
    assert not missing, f"no output in {sorted(missing)}; written: {sorted(rel)}"
    for folder in folders:
        print(f"ok {os.path.relpath(folder, a.out)}: {check(folder)} rows in every reader")
    check_tokens(os.path.join(a.out, "quickstart"))
    print(f"ok single/quickstart.parquet: {check_single_file(a.tokq, a.out)} rows in every reader")
    print(f"ok ids as byte streams: {check_byte_streams(a.tokq, a.out)} rows, the same ids in pyarrow, Polars and datasets "
          f"(DuckDB {duckdb.__version__}: {'the same' if DUCKDB_READS_SPLIT_INTEGERS else 'refused, as documented'})")
    print(f"ok {len(folders)} output folders of {len(glob.glob(os.path.join(REPO, 'queries/*.sql')))} recipes open in "
          "DuckDB, Polars, pyarrow and datasets as they are")


if __name__ == "__main__":
    sys.exit(main())

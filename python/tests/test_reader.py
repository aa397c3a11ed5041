"""The training reader against a freshly produced tokq output.

Outputs come from the tokq command the package installs (or TOKQ_BIN). CI runs it with
`python -m pytest python/tests` against the freshly built wheel.
"""

import os
import pathlib
import shutil
import subprocess
import sys

import numpy as np
import pyarrow.parquet as pq
import pytest

from tokq import TokqDataset, TokqFormatError, read_manifest

REPO = pathlib.Path(__file__).resolve().parents[2]
SEQ = 64


def tokq_bin() -> str:
    """TOKQ_BIN if set, else the tokq command this package installed beside python."""
    if "TOKQ_BIN" in os.environ:
        return os.environ["TOKQ_BIN"]
    found = shutil.which("tokq", path=os.path.dirname(sys.executable))
    assert found, "pip install ./python installs the tokq command"
    return found


def run(recipe: str, tmp: pathlib.Path, name: str) -> pathlib.Path:
    path = tmp / f"{name}.sql"
    path.write_text(recipe)
    subprocess.run([tokq_bin(), "run", str(path), "--quiet"], cwd=REPO, check=True)
    return tmp / name


@pytest.fixture(scope="module")
def packed(tmp_path_factory) -> pathlib.Path:
    tmp = tmp_path_factory.mktemp("packed")
    return run(
        f"""CREATE VIEW t AS SELECT id AS doc_id, _source, _row, tokenize(text, 'tiktoken:cl100k_base') AS input_ids
            FROM read_jsonl('queries/data/*.jsonl*');
            COPY (SELECT * FROM pack_tokens('t', {SEQ}, 'eos=100257,tail=pad,pad=0'))
            TO '{tmp}/out/' STORED AS PARQUET OPTIONS ('max_row_group_size' '16');""",
        tmp,
        "out",
    )


def all_rows(out: pathlib.Path) -> np.ndarray:
    files = read_manifest(str(out))["files"]
    tables = [pq.read_table(out / f["path"], columns=["input_ids"]) for f in files]
    return np.concatenate([np.stack(t.column("input_ids").to_numpy(zero_copy_only=False)) for t in tables])


def test_batches_have_the_packed_shape_and_document_boundaries(packed):
    batches = list(TokqDataset(str(packed), batch_size=8, with_doc_boundaries=True))
    assert all(b["input_ids"].shape == (8, SEQ) for b in batches[:-1])
    assert batches[0]["input_ids"].dtype == np.uint32
    got = np.concatenate([b["input_ids"] for b in batches])
    np.testing.assert_array_equal(got, all_rows(packed))
    # cu_seqlens marks every document start in the flattened batch; EOS (100257) ends each document.
    for b in batches:
        flat, cu = b["input_ids"].reshape(-1), b["cu_seqlens"]
        assert cu[0] == 0 and cu[-1] == flat.size and (np.diff(cu) > 0).all()
        for start in cu[1:-1]:
            row_start = start % SEQ == 0
            assert row_start or flat[start - 1] == 100257, "a document starts after an EOS or at a row start"


def test_every_row_once_across_ranks_and_workers(packed):
    seen = []
    for rank in range(2):
        for worker in range(3):
            ds = TokqDataset(str(packed), batch_size=5, rank=rank, world_size=2, num_workers=3, worker_id=worker, even=None)
            seen.extend(map(bytes, np.concatenate([b["input_ids"] for b in ds] or [np.empty((0, SEQ), np.uint32)])))
    want = list(map(bytes, all_rows(packed)))
    assert sorted(seen) == sorted(want) and len(seen) == len(want)


@pytest.mark.parametrize("world_size", [2, 3, 8])
@pytest.mark.parametrize("even", ["pad", "drop"])
@pytest.mark.parametrize("seed", [None, 3])
def test_every_rank_gets_the_same_rows_and_batches(packed, world_size, even, seed):
    want = list(map(bytes, all_rows(packed)))
    groups = [pq.ParquetFile(packed / f["path"]).metadata.num_row_groups for f in read_manifest(str(packed))["files"]]
    assert sum(groups) >= 3 and len(want) % world_size != 0, "uneven row groups and a remainder to share"
    rows, batches = [], []
    for rank in range(world_size):
        ds = TokqDataset(str(packed), batch_size=4, rank=rank, world_size=world_size, even=even, shuffle_seed=seed)
        got = [b["input_ids"] for b in ds]
        batches.append(len(got))
        rows.append(list(map(bytes, np.concatenate(got))) if got else [])
    assert len(set(map(len, rows))) == 1 and len(set(batches)) == 1, (list(map(len, rows)), batches)
    seen = [r for rank_rows in rows for r in rank_rows]
    if even == "pad":  # every row, and the fewest repeats that even the ranks out
        assert set(seen) == set(want) and len(seen) - len(want) < world_size
    else:  # no row twice, and fewer than world_size left out
        assert len(seen) == len(set(seen)) and len(want) - len(seen) < world_size and set(seen) <= set(want)


def test_a_tokenizer_file_is_the_same_by_any_path(shared, tmp_path):
    gpt2 = shared / "tokenizers/gpt2/tokenizer.json"
    relative = os.path.relpath(gpt2, REPO)
    out = run(
        f"""COPY (SELECT pad_tokens(tokenize(text, '{relative}'), 32, 0) AS input_ids FROM read_jsonl('queries/data/sample.jsonl'))
            TO '{tmp_path}/out/' STORED AS PARQUET;""",
        tmp_path,
        "out",
    )
    copy = tmp_path / "copy-of-gpt2.json"
    shutil.copyfile(gpt2, copy)
    for same in (str(gpt2.resolve()), str(copy), relative):
        TokqDataset(str(out), batch_size=4, expect_tokenizer=same)
    with pytest.raises(TokqFormatError, match="refusing to mix tokenizers"):
        TokqDataset(str(out), batch_size=4, expect_tokenizer=str(shared / "tokenizers/llama3/tokenizer.json"))


def test_shuffle_is_seeded_per_epoch(packed):
    def order(seed, epoch):
        ds = TokqDataset(str(packed), batch_size=4, shuffle_seed=seed)
        ds.set_epoch(epoch)
        return np.concatenate([b["input_ids"] for b in ds])

    a, b, c = order(1, 0), order(1, 0), order(1, 1)
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, c)
    assert sorted(map(bytes, a)) == sorted(map(bytes, all_rows(packed)))


def test_refuses_another_tokenizer(packed):
    with pytest.raises(TokqFormatError, match="tokenized with tiktoken:cl100k_base"):
        TokqDataset(str(packed), batch_size=4, expect_tokenizer="tiktoken:o200k_base")
    TokqDataset(str(packed), batch_size=4, expect_tokenizer="tiktoken:cl100k_base")


def test_refuses_another_format_version(packed, tmp_path):
    first = read_manifest(str(packed))["files"][0]["path"]
    table = pq.read_table(packed / first)
    meta = dict(table.schema.metadata or {})
    meta[b"tokq.format_version"] = b"99"
    pq.write_table(table.replace_schema_metadata(meta), tmp_path / "part-00000.parquet")
    with pytest.raises(TokqFormatError, match="format version 99"):
        TokqDataset(str(tmp_path), batch_size=4, allow_partial=True)


def test_refuses_output_without_a_manifest_unless_partial_is_allowed(packed, tmp_path):
    files = read_manifest(str(packed))["files"]
    for f in files:
        (tmp_path / f["path"]).write_bytes((packed / f["path"]).read_bytes())
    with pytest.raises(TokqFormatError, match="has not finished"):
        TokqDataset(str(tmp_path), batch_size=4)
    partial = TokqDataset(str(tmp_path), batch_size=4, allow_partial=True)
    assert len(partial.output.files) == len(files)


def test_padded_rows_come_with_their_mask(tmp_path):
    out = run(
        f"""COPY (SELECT pad_tokens(ids, {SEQ}, 0) AS input_ids, attention_mask(ids, {SEQ}) AS attention_mask
            FROM (SELECT tokenize(text, 'tiktoken:cl100k_base') AS ids FROM read_jsonl('queries/data/sample.jsonl')))
            TO '{tmp_path}/padded/' STORED AS PARQUET;""",
        tmp_path,
        "padded",
    )
    batches = list(TokqDataset(str(out), batch_size=7))
    assert sum(len(b["input_ids"]) for b in batches) == 120
    for b in batches:
        assert b["attention_mask"].shape == b["input_ids"].shape
        assert (b["input_ids"][b["attention_mask"] == 0] == 0).all()


def test_variable_length_rows_are_refused(tmp_path):
    out = run(
        f"""COPY (SELECT tokenize(text, 'tiktoken:cl100k_base') AS input_ids FROM read_jsonl('queries/data/sample.jsonl'))
            TO '{tmp_path}/docs/' STORED AS PARQUET;""",
        tmp_path,
        "docs",
    )
    with pytest.raises(TokqFormatError, match="pack_tokens"):
        list(TokqDataset(str(out), batch_size=4))


def test_torch_tensors_when_torch_is_installed(packed):
    torch = pytest.importorskip("torch")
    batch = next(iter(TokqDataset(str(packed), batch_size=4, as_torch=True)))
    assert batch["input_ids"].dtype == torch.int64 and tuple(batch["input_ids"].shape) == (4, SEQ)


def test_reads_from_s3(packed):
    endpoint = os.environ.get("TOKQ_TEST_S3_ENDPOINT")
    if not endpoint:
        assert not os.environ.get("CI"), "CI starts an S3 server and sets TOKQ_TEST_S3_ENDPOINT"
        pytest.skip("TOKQ_TEST_S3_ENDPOINT is not set")
    import boto3

    s3 = boto3.client("s3", endpoint_url=endpoint, aws_access_key_id="test", aws_secret_access_key="test", region_name="us-east-1")
    for p in packed.iterdir():
        s3.upload_file(str(p), "tokq-test", f"reader/{p.name}")
    host = endpoint.split("://", 1)[1]
    uri = f"s3://test:test@tokq-test/reader?endpoint_override={host}&scheme=http&region=us-east-1"
    got = np.concatenate([b["input_ids"] for b in TokqDataset(uri, batch_size=8, expect_tokenizer="tiktoken:cl100k_base")])
    np.testing.assert_array_equal(got, all_rows(packed))

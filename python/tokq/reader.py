"""A streaming training reader for tokq's pretokenized Parquet output.

`TokqDataset` yields batches of fixed-length rows (packed by `pack_tokens`, or padded by
`pad_tokens`) as numpy arrays of shape (batch, seq_len). It checks every file's footer (format
version, tokenizer) before it reads a token, gives each rank and dataloader worker an equal run of
rows (so that every rank runs the same number of steps), and reads one row group at a time, so
memory stays at about one row group per worker.
With torch installed it is a `torch.utils.data.IterableDataset`.
"""

from __future__ import annotations

import hashlib
import json
import os
import posixpath
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.parquet as pq

try:  # torch is optional: without it the dataset is a plain iterable.
    import torch
    from torch.utils.data import IterableDataset as _Base
except ImportError:  # pragma: no cover - exercised when torch is absent
    torch = None
    _Base = object

FORMAT_VERSION = 2
MANIFEST = "_tokq_manifest.parquet"


def read_manifest(path: str) -> dict[str, Any]:
    """The manifest of a local or `s3://` output directory: the JSON in the footer of its
    `_tokq_manifest.parquet` (a Parquet file with the output's schema and no rows, so that
    readers of the whole folder see it as an empty part)."""
    fs, root = pafs.FileSystem.from_uri(path) if "://" in path else (pafs.LocalFileSystem(), path)
    with fs.open_input_file(posixpath.join(root.rstrip("/"), MANIFEST)) as f:
        manifest: dict[str, Any] = json.loads(pq.ParquetFile(f).metadata.metadata[b"tokq.manifest"])
        return manifest


class TokqFormatError(ValueError):
    """The output is not what this reader or the caller expects; the message says what to do."""


@dataclass
class FileInfo:
    path: str
    row_groups: list[int]
    tokenizers: list[dict[str, Any]]
    packing: dict[str, Any] | None
    group_rows: list[int] = field(default_factory=list)


@dataclass
class Output:
    """A tokq output directory: its files, in the manifest's order, with their footers checked."""

    root: str
    filesystem: pafs.FileSystem
    files: list[FileInfo] = field(default_factory=list)
    manifest: dict[str, Any] | None = None


def _file_sha256(spec: str) -> str | None:
    """The sha256 of the file a tokenizer spec names, when it is a local file: the same file by
    another path (absolute, relative, a copy) is the same tokenizer."""
    path = spec.removeprefix("file://")
    if not os.path.isfile(path):
        return None
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def _footer(md: pq.FileMetaData, path: str, expect_tokenizer: str | None, expect_sha256: str | None = None) -> FileInfo:
    kv = md.metadata or {}
    version = kv.get(b"tokq.format_version")
    if version is None:
        raise TokqFormatError(f"{path}: no tokq.format_version in the Parquet footer; this is not tokq output")
    if int(version) != FORMAT_VERSION:
        raise TokqFormatError(
            f"{path}: written in tokq format version {int(version)}, this reader reads version {FORMAT_VERSION}; "
            "install the tokq package that matches the writer, or re-run the recipe"
        )
    tokenizers = json.loads(kv.get(b"tokq.tokenizer", b"[]"))
    if expect_tokenizer is not None and not any(expect_tokenizer in (t["spec"], t["sha256"]) or t["sha256"] == expect_sha256 for t in tokenizers):
        used = ", ".join(f"{t['spec']} (sha256 {t['sha256'][:12]})" for t in tokenizers) or "no tokenizer"
        raise TokqFormatError(f"{path}: tokenized with {used}, expected {expect_tokenizer}; refusing to mix tokenizers")
    packing = json.loads(kv[b"tokq.packing"]) if b"tokq.packing" in kv else None
    groups = list(range(md.num_row_groups))
    return FileInfo(path, groups, tokenizers, packing, [md.row_group(g).num_rows for g in groups])


def open_output(path: str, expect_tokenizer: str | None = None, allow_partial: bool = False) -> Output:
    """Opens a local or `s3://` output directory and checks every file's footer.

    The manifest is written last, so without it the run did not finish: that is an error unless
    `allow_partial` asks for the files that are complete."""
    fs, root = pafs.FileSystem.from_uri(path) if "://" in path else (pafs.LocalFileSystem(), path)
    root = root.rstrip("/")
    out = Output(root, fs)
    try:
        with fs.open_input_file(posixpath.join(root, MANIFEST)) as f:
            out.manifest = json.loads(pq.ParquetFile(f).metadata.metadata[b"tokq.manifest"])
        names = [r["path"] for r in out.manifest["files"]]
    except FileNotFoundError:
        if not allow_partial:
            raise TokqFormatError(
                f"{path}: no {MANIFEST}, so the run that writes here has not finished; "
                "rerun the recipe (it resumes), or pass allow_partial=True to read the files that are complete"
            ) from None
        selector = pafs.FileSelector(root, recursive=False)
        names = sorted(
            posixpath.basename(i.path) for i in fs.get_file_info(selector) if posixpath.basename(i.path).startswith("part-") and i.path.endswith(".parquet")
        )
    if not names:
        raise TokqFormatError(f"{path}: no Parquet files; run a recipe that writes here first")
    digest = _file_sha256(expect_tokenizer) if expect_tokenizer is not None else None
    for name in names:
        p = posixpath.join(root, name)
        with fs.open_input_file(p) as f:
            out.files.append(_footer(pq.ParquetFile(f).metadata, p, expect_tokenizer, digest))
    specs = {json.dumps(f.tokenizers, sort_keys=True) for f in out.files}
    if len(specs) > 1:
        raise TokqFormatError(f"{path}: files were tokenized with different tokenizers: {sorted(specs)}")
    return out


def _fixed_rows(column: pa.ChunkedArray, name: str, seq_len: int | None) -> np.ndarray:
    """A list column whose rows all have seq_len values, as a zero-copy (rows, seq_len) array."""
    arr = column.combine_chunks() if column.num_chunks != 1 else column.chunk(0)
    offsets = np.asarray(arr.offsets)
    lengths = np.diff(offsets)
    n = len(arr)
    width = seq_len if seq_len is not None else (int(lengths[0]) if n else 0)
    if n and (lengths != width).any():
        raise TokqFormatError(
            f"'{name}' rows have {int(lengths.min())}..{int(lengths.max())} values, expected {width} in every row: "
            "write training rows with pack_tokens (packed) or pad_tokens (padded)"
        )
    values = np.asarray(arr.values.slice(int(offsets[0]), n * width))
    return values.reshape(n, width)


def _cu_seqlens(column: pa.ChunkedArray, seq_len: int, start: int, stop: int) -> np.ndarray:
    """Document starts in the flattened rows start..stop, then their end: flash-attention's cu_seqlens."""
    arr = column.combine_chunks() if column.num_chunks != 1 else column.chunk(0)
    offsets = np.asarray(arr.offsets)
    lo, hi = int(offsets[start]), int(offsets[stop])
    starts = np.asarray(arr.values.slice(lo, hi - lo)).astype(np.int32)
    rows = np.repeat(np.arange(stop - start, dtype=np.int32), np.diff(offsets[start : stop + 1]))
    return np.concatenate([starts + rows * seq_len, np.array([(stop - start) * seq_len], dtype=np.int32)])


class TokqDataset(_Base):  # type: ignore[misc]  # torch's IterableDataset when torch is there
    """Batches of `input_ids` (and `attention_mask` / `cu_seqlens` when present and asked for).

    path: the output directory (local or s3://).
    batch_size: rows per batch.
    expect_tokenizer: a tokenizer spec or sha256 that every file must have been tokenized with.
    rank, world_size: this process's shard of a data-parallel job.
    num_workers, worker_id: the dataloader worker; taken from torch when not given.
    shuffle_seed: shuffle the order of row groups and rows within them, per epoch (`set_epoch`).
    even: how rows are shared among the rank x worker shards. "pad" (the default, as torch's
        DistributedSampler): every shard gets ceil(rows / shards) rows, the last ones taking
        rows again from the start of the epoch's order; "drop": floor(rows / shards), the
        remainder (fewer rows than shards) left out; None: whole row groups dealt in turn, every
        row once but shards uneven. With "pad" or "drop" every rank runs the same number of
        batches, which data-parallel training needs (a rank with a batch more waits forever in
        its last all-reduce).
    with_doc_boundaries: also yield `cu_seqlens` built from `doc_offsets` (packed output).
    as_torch: yield int64 torch tensors instead of numpy arrays.
    allow_partial: read an output whose run has not finished (no manifest yet): only the files
        that are complete, which a rerun may still replace.
    """

    def __init__(
        self,
        path: str,
        batch_size: int,
        *,
        expect_tokenizer: str | None = None,
        rank: int = 0,
        world_size: int = 1,
        num_workers: int | None = None,
        worker_id: int | None = None,
        shuffle_seed: int | None = None,
        with_doc_boundaries: bool = False,
        drop_last: bool = False,
        as_torch: bool = False,
        allow_partial: bool = False,
        even: str | None = "pad",
    ):
        if batch_size < 1:
            raise ValueError(f"batch_size must be at least 1, got {batch_size}")
        if not 0 <= rank < world_size:
            raise ValueError(f"rank {rank} is outside 0..{world_size - 1}")
        if even not in ("pad", "drop", None):
            raise ValueError(f"even must be 'pad', 'drop' or None, got {even!r}")
        if as_torch and torch is None:
            raise ImportError("as_torch=True needs torch: pip install 'tokq[torch]'")
        self.output = open_output(path, expect_tokenizer, allow_partial)
        packing = self.output.files[0].packing
        self.seq_len: int | None = packing["seq_len"] if packing else None
        if with_doc_boundaries and packing is None:
            raise TokqFormatError(f"{path}: with_doc_boundaries needs packed output (pack_tokens)")
        self.batch_size, self.rank, self.world_size = batch_size, rank, world_size
        self.num_workers, self.worker_id = num_workers, worker_id
        self.shuffle_seed, self.epoch = shuffle_seed, 0
        self.with_doc_boundaries, self.drop_last, self.as_torch = with_doc_boundaries, drop_last, as_torch
        self.even = even
        names = pq.ParquetFile(self.output.files[0].path, filesystem=self.output.filesystem).schema_arrow.names
        self.columns = ["input_ids"] + [c for c in ("attention_mask",) if c in names]
        if with_doc_boundaries:
            self.columns.append("doc_offsets")

    def set_epoch(self, epoch: int) -> None:
        self.epoch = epoch

    def _worker(self) -> tuple[int, int]:
        if self.num_workers is not None:
            return self.worker_id or 0, self.num_workers
        info = torch.utils.data.get_worker_info() if torch is not None else None
        return (info.id, info.num_workers) if info is not None else (0, 1)

    def _epoch_units(self) -> list[tuple[int, int]]:
        """Every (file, row group) pair, in this epoch's order."""
        units = [(f, g) for f, info in enumerate(self.output.files) for g in info.row_groups]
        if self.shuffle_seed is not None:
            order = np.random.default_rng([self.shuffle_seed, self.epoch]).permutation(len(units))
            units = [units[i] for i in order]
        return units

    def _shard(self) -> tuple[int, int]:
        worker, workers = self._worker()
        return self.rank * workers + worker, self.world_size * workers

    def units(self) -> list[tuple[int, int]]:
        """This shard's (file, row group) pairs, in reading order (a pair may be read in part)."""
        return list(dict.fromkeys((f, g) for f, g, _, _ in self.slices()))

    def slices(self) -> list[tuple[int, int, int, int]]:
        """This shard's rows: (file, row group, first row, end row), in reading order."""
        units = self._epoch_units()
        shard, shards = self._shard()
        rows = [self.output.files[f].group_rows[g] for f, g in units]
        if self.even is None:
            return [(f, g, 0, rows[i]) for i, (f, g) in enumerate(units) if i % shards == shard]
        total = sum(rows)
        per = total // shards if self.even == "drop" else -(-total // shards)
        if total == 0 or per == 0:
            return []
        # Rows [shard * per, shard * per + per) of the epoch's sequence; past its end, from its start.
        out, begin, want = [], (shard * per) % total, per
        starts = np.cumsum([0] + rows)
        while want > 0:
            i = int(np.searchsorted(starts, begin, side="right")) - 1
            f, g = units[i]
            first = begin - int(starts[i])
            take = min(rows[i] - first, want)
            out.append((f, g, first, first + take))
            want -= take
            begin = (begin + take) % total
        return out

    def _row_groups(self) -> Iterator[dict[str, np.ndarray]]:
        rng = np.random.default_rng([self.shuffle_seed, self.epoch, self.rank]) if self.shuffle_seed is not None else None
        handles: dict[int, pq.ParquetFile] = {}
        for f, g, first, end in self.slices():
            if f not in handles:
                handles.clear()
                handles[f] = pq.ParquetFile(self.output.files[f].path, filesystem=self.output.filesystem)
            table = handles[f].read_row_group(g, columns=self.columns, use_threads=False).slice(first, end - first)
            arrays = {c: _fixed_rows(table.column(c), c, self.seq_len) for c in self.columns if c != "doc_offsets"}
            if "doc_offsets" in self.columns:
                arrays["doc_offsets"] = table.column("doc_offsets")
            if rng is not None:
                perm = rng.permutation(table.num_rows)
                arrays = {k: (v[perm] if isinstance(v, np.ndarray) else v.take(pa.array(perm))) for k, v in arrays.items()}
            yield arrays

    def _batch(self, parts: Sequence[tuple[dict[str, Any], int, int]]) -> dict[str, object]:
        """A batch from (arrays, start, stop) slices of one or more row groups."""
        out: dict[str, object] = {}
        for c in self.columns:
            if c == "doc_offsets":
                cus, base = [], 0
                for arrays, s, e in parts:
                    assert self.seq_len is not None  # doc_offsets come only with fixed-length rows
                    cu = _cu_seqlens(arrays[c], self.seq_len, s, e)
                    cus.append(cu[:-1] + base)
                    base += (e - s) * self.seq_len
                out["cu_seqlens"] = np.concatenate(cus + [np.array([base], dtype=np.int32)])
            else:
                pieces = [arrays[c][s:e] for arrays, s, e in parts]
                out[c] = pieces[0] if len(pieces) == 1 else np.concatenate(pieces)
        if self.as_torch:
            out = {k: torch.from_numpy(np.asarray(v, dtype=np.int64 if k != "cu_seqlens" else np.int32)) for k, v in out.items()}
        return out

    def __iter__(self) -> Iterator[dict[str, object]]:
        bs = self.batch_size
        pending: list[tuple[dict[str, Any], int, int]] = []  # slices waiting to fill a batch
        waiting = 0
        for arrays in self._row_groups():
            n = len(arrays["input_ids"])
            pos = 0
            if pending:
                take = min(bs - waiting, n)
                pending.append((arrays, 0, take))
                waiting, pos = waiting + take, take
                if waiting < bs:
                    continue
                yield self._batch(pending)
                pending, waiting = [], 0
            while n - pos >= bs:
                yield self._batch([(arrays, pos, pos + bs)])
                pos += bs
            if pos < n:
                pending, waiting = [(arrays, pos, n)], n - pos
        if pending and not self.drop_last:
            yield self._batch(pending)

"""`tokq.sql` and `tokq.run`: the engine's SQL and recipes, called in this process."""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Mapping
from typing import Any, Literal, overload

import pyarrow as pa

from . import _native

Progress = Callable[[str, int, "int | None", int, float], None]


def _params(params: Mapping[str, object] | None) -> dict[str, str]:
    """Parameter values as the recipe's `${name}` text: booleans as SQL spells them."""
    out = {}
    for k, v in (params or {}).items():
        out[str(k)] = ("true" if v else "false") if isinstance(v, bool) else os.fspath(v) if isinstance(v, os.PathLike) else str(v)
    return out


@overload
def sql(query: str, params: Mapping[str, object] | None = ..., *, partitions: int | None = ...,
        memory_limit: str | None = ..., stream: Literal[False] = ...) -> pa.Table: ...
@overload
def sql(query: str, params: Mapping[str, object] | None = ..., *, partitions: int | None = ...,
        memory_limit: str | None = ..., stream: Literal[True]) -> pa.RecordBatchReader: ...


def sql(query: str, params: Mapping[str, object] | None = None, *, partitions: int | None = None,
        memory_limit: str | None = None, stream: bool = False) -> pa.Table | pa.RecordBatchReader:
    """Run SQL with every tokq function and return the last statement's rows.

    `query` may hold several statements (`CREATE VIEW ...; SELECT ...`); they run in order and
    the last one's rows come back as a `pyarrow.Table` whose buffers are the ones tokq computed
    (no copy). `${name}` is filled from `params`. With `stream=True` the result is a
    `pyarrow.RecordBatchReader` that computes each batch as it is read, for results larger than
    memory. A last statement without rows (COPY, CREATE) gives an empty table.
    Python UDFs registered with `@tokq.udf` are callable by name.
    """
    result = _native.sql(query, _params(params), partitions, memory_limit, stream)
    reader = pa.RecordBatchReader.from_stream(result)
    return reader if stream else reader.read_all()


def _tqdm_progress() -> Progress | None:
    """A tqdm bar per statement, if tqdm is installed."""
    try:
        from tqdm.auto import tqdm
    except ImportError:
        return None
    bars: dict[str, Any] = {}

    def show(statement: str, done: int, total: int | None, rows: int, seconds: float) -> None:
        bar = bars.get(statement)
        if bar is None:
            for old in bars.values():
                old.close()
            bars.clear()
            bar = bars[statement] = tqdm(total=total, desc=statement, unit="B", unit_scale=True, leave=False)
        bar.n = done
        bar.set_postfix(rows=rows, refresh=False)
        bar.refresh()

    return show


def run(recipe: str | os.PathLike[str], params: Mapping[str, object] | None = None, partitions: int | None = None,
        cluster: str | None = None, memory_limit: str | None = None, *, on_bad_row: str = "fail",
        progress: Progress | bool | None = None, strict_schema: bool = False, overwrite: bool = False) -> dict[str, Any]:
    """Run a recipe file as `tokq run` does and return its statistics (what `--stats-json`
    writes): rows and bytes read, outputs, accounting (kept + rejected per COPY), time per statement.

    `progress` is a callable `(statement, bytes, total_bytes, rows, seconds)` called on this
    thread every half second while a statement reads and once with its final figures when it
    ends; by default a tqdm bar if tqdm is installed;
    `False` shows nothing. Nothing is printed on stdout. The GIL is released while the recipe
    runs, and Ctrl-C stops it (KeyboardInterrupt) with nothing half-written visible: a rerun
    resumes. A failed statement raises `tokq.StatementError`, whose `.stats` is what ran.

    An input file that lacks a column the recipe reads (`content` where the others have `text`)
    is read with NULL there and listed under `schema_drift`; `strict_schema=True` fails instead.

    A COPY whose target holds another recipe's output, or files tokq did not write, fails and
    says what is there; `overwrite=True` replaces it (`--overwrite`). A rerun of the same recipe
    replaces its own output either way.
    """
    show = _tqdm_progress() if progress is None or progress is True else progress or None
    try:
        stats = _native.run(os.fspath(recipe), _params(params), partitions, cluster, memory_limit, on_bad_row, show,
                            strict_schema, overwrite)
    except _native.StatementError as e:
        e.stats = json.loads(e.stats_json)
        raise
    result: dict[str, Any] = json.loads(stats)
    return result

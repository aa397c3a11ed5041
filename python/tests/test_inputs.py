"""Inputs a Python user names as elsewhere: hf:// as huggingface_hub writes it, and outputs kept
from being replaced by another recipe unless overwrite=True."""

from __future__ import annotations

import json
import pathlib
import threading
import urllib.parse
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

import tokq


class Hub(BaseHTTPRequestHandler):
    """The hub's resolve URLs (with ranges) and tree API over the folder `root`:
    datasets/ORG/NAME/REVISION/PATH."""

    root: pathlib.Path

    def log_message(self, *args: object) -> None:
        pass

    def do_HEAD(self) -> None:
        self.answer(body=False)

    def do_GET(self) -> None:
        self.answer(body=True)

    def answer(self, body: bool) -> None:
        url = urllib.parse.urlsplit(self.path)
        parts = [urllib.parse.unquote(p) for p in url.path.strip("/").split("/")]
        if parts[:2] == ["api", "datasets"] and parts[4] == "tree":
            top = self.root / "datasets" / parts[2] / parts[3] / parts[5]
            under = top.joinpath(*parts[6:])
            files = sorted(p for p in under.rglob("*") if p.is_file()) if under.is_dir() else []
            entries = [{"type": "file", "oid": str(p.stat().st_size), "size": p.stat().st_size,
                        "path": p.relative_to(top).as_posix()} for p in files]
            return self.send(200, json.dumps(entries).encode(), {}, body)
        if parts[0] == "datasets" and parts[3] == "resolve":
            path = self.root / "datasets" / parts[1] / parts[2] / parts[4] / "/".join(parts[5:])
            if not path.is_file():
                return self.send(404, b"", {}, body)
            data = path.read_bytes()
            headers = {"ETag": f'"{len(data)}"'}
            ask = self.headers.get("Range")
            if ask:
                start, _, end = ask.removeprefix("bytes=").partition("-")
                first, last = int(start), min(int(end) if end else len(data) - 1, len(data) - 1)
                headers["Content-Range"] = f"bytes {first}-{last}/{len(data)}"
                return self.send(206, data[first:last + 1], headers, body)
            return self.send(200, data, headers, body)
        self.send(404, b"", {}, body)

    def send(self, status: int, data: bytes, headers: dict[str, str], body: bool) -> None:
        self.send_response(status)
        self.send_header("Content-Length", str(len(data)))
        for k, v in headers.items():
            self.send_header(k, v)
        self.end_headers()
        if body:
            self.wfile.write(data)


@pytest.fixture
def hub(tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[pathlib.Path]:
    """A hub on 127.0.0.1 over tmp_path/hub, which tokq finds through HF_ENDPOINT."""
    root = tmp_path / "hub"
    handler = type("HubHere", (Hub,), {"root": root})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    monkeypatch.setenv("HF_ENDPOINT", f"http://127.0.0.1:{server.server_address[1]}")
    monkeypatch.setenv("HF_TOKEN", "")
    monkeypatch.setenv("HF_TOKEN_PATH", str(tmp_path / "no-token"))
    yield root
    server.shutdown()


def test_hub_files_read_by_glob_with_lineage(hub: pathlib.Path) -> None:
    data = hub / "datasets/org/corpus/main/data"
    (data / "sub").mkdir(parents=True)
    (data / "a.jsonl").write_text('{"text": "one"}\n{"text": "two"}\n')
    (data / "sub/b.jsonl").write_text('{"text": "three"}\n')
    t = tokq.sql("SELECT text, _source, _row FROM read_jsonl('hf://datasets/org/corpus/data/**/*.jsonl') ORDER BY text")
    assert t.to_pydict() == {
        "text": ["one", "three", "two"],
        "_source": ["hf://datasets/org/corpus/data/a.jsonl", "hf://datasets/org/corpus/data/sub/b.jsonl",
                    "hf://datasets/org/corpus/data/a.jsonl"],
        "_row": [0, 0, 1],
    }


def test_a_run_can_read_the_hub_but_not_write_there(hub: pathlib.Path, tmp_path: pathlib.Path) -> None:
    (hub / "datasets/org/corpus/main").mkdir(parents=True)
    (hub / "datasets/org/corpus/main/x.jsonl").write_text('{"text": "hello world"}\n')
    recipe = tmp_path / "r.sql"
    recipe.write_text("COPY (SELECT text, token_count(text, 'tiktoken:cl100k_base') AS n, _source, _row "
                      "FROM read_jsonl('hf://datasets/org/corpus/x.jsonl')) TO '${out}' STORED AS PARQUET;")
    stats = tokq.run(str(recipe), {"out": f"{tmp_path}/out/"})
    assert stats["outputs"][0]["rows"] == 1
    with pytest.raises(tokq.TokqError, match="read-only"):
        tokq.run(str(recipe), {"out": "hf://datasets/org/corpus/out/"})


def test_another_recipes_output_is_kept_unless_overwrite(tmp_path: pathlib.Path) -> None:
    out = f"{tmp_path}/out/"
    first, second = tmp_path / "first.sql", tmp_path / "second.sql"
    first.write_text("COPY (SELECT 1 AS x) TO '${out}' STORED AS PARQUET;")
    second.write_text("COPY (SELECT 2 AS x) TO '${out}' STORED AS PARQUET;")
    tokq.run(str(first), {"out": out})
    tokq.run(str(first), {"out": out})  # a rerun of the same recipe replaces its own output
    with pytest.raises(tokq.TokqError, match="another recipe"):
        tokq.run(str(second), {"out": out})
    assert tokq.sql(f"SELECT x FROM read_parquet('{out}')").to_pydict() == {"x": [1]}
    tokq.run(str(second), {"out": out}, overwrite=True)
    assert tokq.sql(f"SELECT x FROM read_parquet('{out}')").to_pydict() == {"x": [2]}

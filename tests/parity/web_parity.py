"""Web parity: tokq's `read_warc` against warcio, and `url_filter` against datatrove's URLFilter.

Reader: test WARCs are written here with warcio, gzip per record and uncompressed, with the hard
cases (chunked bodies, gzip/deflate/br content-encoding, windows-1252, Shift-JIS and GB18030
pages, a non-HTML payload, a 20 MB page, malformed HTML, request/metadata/resource/revisit/
warcinfo records, a dns: record), plus the shared 991-page WARC. For every record tokq must give
warcio's record count, type, URL, record id, HTTP status, Content-Type and payload bytes
(`content_stream().read()`); seeking to `_offset` and reading one record with warcio must give
the same record. A copy whose last record is cut must fail with `file: offset N: cause` (N the
record's offset) and, with `--on-bad-row skip`, give every other record and count one bad row.

URL filter: datatrove 0.10.1's `URLFilter` with its bundled lists (tldextract on its bundled
suffix list snapshot, no download) against `url_filter(url, 'lists=..., psl=...')` on datatrove's
own test cases, every URL of the test WARCs and the shared WARC, and generated URLs that hit each
rule (blocked domains, subdomains and URLs from the lists, banned words, soft word pairs, banned
subwords) and the awkward hosts (IPs, ports, user info, case, punycode, IPv6, no scheme).

    python tests/parity/web_parity.py --tokq $CARGO_TARGET_DIR/release/tokq --shared ../shared
"""
import argparse
import gzip
import io
import json
import os
import random
import subprocess
import sys
import tempfile
import zlib

import brotli
import pyarrow.parquet as pq
from warcio.archiveiterator import ArchiveIterator
from warcio.bufferedreaders import BufferedReader
from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter



class BrotliForWarcio:
    """warcio 1.8.1 sets `unused_data` on brotli's decompressor, which brotli 1.1+ refuses; the same
    decompressor behind an object that accepts it, so warcio decodes br as it means to."""

    def __init__(self):
        self._d = brotli.Decompressor()
        self.unused_data = None

    def decompress(self, data):
        return self._d.process(data)


BufferedReader.DECOMPRESSORS["br"] = BrotliForWarcio

READ_SQL = """COPY (SELECT * FROM read_warc('${input}', 'types=*')) TO '${output}' STORED AS PARQUET;"""
FILTER_SQL = """COPY (SELECT _row, url_filter(url, '${options}') AS reason FROM read_jsonl('${input}')) TO '${output}' STORED AS PARQUET;"""


def run_tokq(tokq, sql, params, *extra, check=True):
    with tempfile.NamedTemporaryFile("w", suffix=".sql", delete=False) as f:
        f.write(sql)
    args = [tokq, "run", "--quiet", f.name, *extra]
    for k, v in params.items():
        args += ["--set", f"{k}={v}"]
    done = subprocess.run(args, capture_output=True, text=True)
    os.unlink(f.name)
    if check and done.returncode != 0:
        sys.exit(f"tokq failed: {done.stderr.strip()}")
    return done


def read_output(path):
    return sorted(pq.read_table(path).to_pylist(), key=lambda r: (r["_source"], r["_row"]) if "_source" in r else r["_row"])


# ---------------------------------------------------------------- test WARCs


def chunked(body, size=100):
    out = b""
    for i in range(0, len(body), size):
        part = body[i : i + size]
        out += b"%x\r\n" % len(part) + part + b"\r\n"
    return out + b"0\r\n\r\n"


def pages():
    """(url, status, headers, body as sent) for the response records."""
    html = "<html><head><title>T</title></head><body><p>Caf\u00e9 na\u00efve \u2014 {}</p></body></html>"
    gz = gzip.compress(html.format("gzip").encode())
    yield "https://example.com/plain", "200 OK", [("Content-Type", "text/html; charset=utf-8")], html.format("plain").encode()
    yield "https://example.com/chunked", "200 OK", [("Content-Type", "text/html"), ("Transfer-Encoding", "chunked")], chunked(html.format("chunked").encode())
    yield "https://example.com/gzip", "200 OK", [("Content-Type", "text/html"), ("Content-Encoding", "gzip")], gz
    yield "https://example.com/chunked-gzip", "200 OK", [("Content-Encoding", "gzip"), ("Transfer-Encoding", "chunked")], chunked(gz, 7)
    yield "https://example.com/deflate", "200 OK", [("Content-Encoding", "deflate")], zlib.compress(html.format("deflate").encode())
    yield "https://example.com/br", "200 OK", [("Content-Encoding", "br")], brotli.compress(html.format("br").encode())
    yield "https://example.com/mislabelled", "200 OK", [("Content-Encoding", "gzip")], b"<p>not gzip at all</p>"
    yield "https://example.com/cp1252", "200 OK", [("Content-Type", "text/html; charset=windows-1252")], html.format("\u20ac \u2018q\u2019").encode("cp1252")
    yield "https://example.jp/sjis", "200 OK", [("Content-Type", "text/html")], '<meta charset="shift_jis"><p>日本語のページです。</p>'.encode("shift_jis")
    yield "https://example.cn/gb", "200 OK", [("Content-Type", "text/html; charset=gb18030")], "<p>中文网页，简体字。</p>".encode("gb18030")
    yield "https://example.com/logo.png", "200 OK", [("Content-Type", "image/png")], b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 4
    big = ("<p>" + "A long page paragraph. " * 40 + "</p>\n") * 22000
    yield "https://example.com/big", "200 OK", [("Content-Type", "text/html")], big.encode()[: 20 << 20]
    yield "https://example.com/malformed", "200 OK", [("Content-Type", "text/html")], b"<html><body><div><p>unclosed <b>bold <table><tr><td>cell</div></p>\x00\xff<"
    yield "https://example.com/missing", "404 Not Found", [("Content-Type", "text/html")], b"<p>not here</p>"
    yield "https://example.com/empty", "204 No Content", [], b""


def write_warc(path, gzip_records):
    with open(path, "wb") as f:
        w = WARCWriter(f, gzip=gzip_records)
        w.write_record(w.create_warcinfo_record("test.warc", {"software": "warcio", "format": "WARC File Format 1.0"}))
        for url, status, headers, body in pages():
            http = StatusAndHeaders(status, headers, protocol="HTTP/1.1")
            w.write_record(w.create_warc_record(url, "response", payload=io.BytesIO(body), http_headers=http))
        req = StatusAndHeaders("GET /plain HTTP/1.1", [("Host", "example.com")], is_http_request=True)
        w.write_record(w.create_warc_record("https://example.com/plain", "request", payload=io.BytesIO(b""), http_headers=req))
        w.write_record(w.create_warc_record("https://example.com/plain", "metadata", payload=io.BytesIO(b"fetchTimeMs: 12\r\n"), warc_content_type="application/warc-fields"))
        w.write_record(w.create_warc_record("https://example.com/file.txt", "resource", payload=io.BytesIO("plain resource text \u00e9".encode()), warc_content_type="text/plain"))
        w.write_record(w.create_warc_record("dns:example.com", "response", payload=io.BytesIO(b"20260101000000\nexample.com. 300 IN A 93.184.216.34\n"), warc_content_type="text/dns"))
        rv = StatusAndHeaders("200 OK", [("Content-Type", "text/html")], protocol="HTTP/1.1")
        w.write_record(w.create_warc_record("https://example.com/plain", "revisit", payload=io.BytesIO(b""), http_headers=rv))


def warcio_records(path):
    out = []
    with open(path, "rb") as f:
        it = ArchiveIterator(f)
        for i, rec in enumerate(it):
            # the payload first: warcio's record offset is only right once the record is read
            content = rec.content_stream().read()
            http = rec.http_headers
            status = int(http.get_statuscode()) if http is not None and rec.rec_type in ("response", "revisit") and http.get_statuscode() else None
            out.append({
                "offset": it.get_record_offset(),
                "row": i,
                "warc_type": rec.rec_type,
                "url": rec.rec_headers.get_header("WARC-Target-URI"),
                "warc_record_id": rec.rec_headers.get_header("WARC-Record-ID"),
                "http_status": status,
                "content_type": (http.get_header("Content-Type") if http is not None else rec.rec_headers.get_header("Content-Type")),
                "content": content,
            })
    return out


def record_at(path, offset):
    with open(path, "rb") as f:
        f.seek(offset)
        return next(iter(ArchiveIterator(f))).rec_headers.get_header("WARC-Record-ID")


def check_reader(tokq, work, files):
    failures = 0
    for path in files:
        want = warcio_records(path)
        out = os.path.join(work, "read-" + os.path.basename(path))
        run_tokq(tokq, READ_SQL, {"input": path, "output": out})
        got = read_output(out)
        name = os.path.basename(path)
        if len(got) != len(want):
            print(f"  {name}: tokq {len(got)} records, warcio {len(want)}")
            failures += 1
            continue
        bad = []
        for g, w in zip(got, want):
            for key in ("warc_type", "url", "warc_record_id", "http_status", "content_type", "content"):
                if g[key] != w[key]:
                    bad.append((w["row"], key, repr(g[key])[:80], repr(w[key])[:80]))
            if g["_row"] != w["row"] or g["_offset"] != w["offset"]:
                bad.append((w["row"], "_row/_offset", (g["_row"], g["_offset"]), (w["row"], w["offset"])))
            elif record_at(path, g["_offset"]) != g["warc_record_id"]:
                bad.append((w["row"], "seek", g["_offset"], w["warc_record_id"]))
        total_bytes = sum(len(w["content"] or b"") for w in want)
        print(f"  {name}: {len(want)} records, {total_bytes:,} payload bytes: {len(want) - len({b[0] for b in bad})} identical")
        for b in bad[:10]:
            print("    differs:", b)
        failures += bool(bad)
    return failures


def check_truncated(tokq, work, intact):
    """The last record cut short: one line naming its offset, or skipped and counted."""
    records = warcio_records(intact)
    last = records[-1]["offset"]
    cut = os.path.join(work, "cut-" + os.path.basename(intact))
    data = open(intact, "rb").read()
    open(cut, "wb").write(data[: last + (len(data) - last) // 2])
    out = os.path.join(work, "read-cut")
    failed = run_tokq(tokq, READ_SQL, {"input": cut, "output": out}, check=False)
    message = failed.stderr.strip()
    want = f"{cut}: offset {last}: "
    ok = failed.returncode != 0 and want in message
    print(f"  truncated {os.path.basename(intact)}: {'fails' if failed.returncode else 'exit 0'}: {message[message.find(cut):][:200]}")
    stats = os.path.join(work, "stats.json")
    run_tokq(tokq, READ_SQL, {"input": cut, "output": out + "-skip"}, "--on-bad-row", "skip", "--stats-json", stats)
    got = read_output(out + "-skip")
    bad_rows = json.load(open(stats)).get("bad_rows_skipped")
    print(f"  with --on-bad-row skip: {len(got)} of {len(records)} records, {bad_rows} bad")
    return int(not (ok and len(got) == len(records) - 1 and bad_rows == 1))


# ---------------------------------------------------------------- url_filter


def datatrove_filter(**kwargs):
    from datatrove.pipeline.filters import URLFilter
    from tldextract import TLDExtract

    f = URLFilter(**kwargs)
    # the suffix list snapshot tldextract ships, never a download
    f.tldextractor = TLDExtract(suffix_list_urls=())
    f.download_data()
    return f


def decide(f, url):
    from datatrove.data import Document

    r = f.filter(Document(text="x", id="0", metadata={"url": url}))
    return None if r is True else r[1]


def generated_urls(f, seed=7):
    rnd = random.Random(seed)
    domains = sorted(rnd.sample(sorted(f.block_listed_domains), 3000)) if len(f.block_listed_domains) > 3000 else sorted(f.block_listed_domains)
    urls = sorted(rnd.sample(sorted(f.block_listed_url), 1000)) if len(f.block_listed_url) > 1000 else sorted(f.block_listed_url)
    out = []
    for d in domains:
        out += [f"https://{d}/", f"http://www.{d}/page?x=1", f"https://a.b.{d}:8443/p#f", f"https://{d.upper()}/", f"https://user:pw@{d}/"]
    for u in urls:
        out += [u, u + "x", u.upper()]
    for w in sorted(f.banned_words):
        out += [f"https://example.com/{w}/page", f"https://{w}.example.org/", f"https://example.com/a{w}b"]
    soft = sorted(f.soft_banned_words)
    for a, b in zip(soft, soft[1:] + soft[:1]):
        out += [f"https://example.com/{a}-{b}", f"https://example.com/{a}", f"https://{a}.example.com/{b}.html"]
    for s in sorted(f.banned_subwords):
        out += [f"https://ex{s}ample.com/", f"https://example.com/x-{s.upper()}-y"]
    out += [
        "http://127.0.0.1/x", "http://256.1.1.1/", "http://[::1]:8080/", "http://localhost:8080/", "example.com/no-scheme",
        "//cdn.example.com/x", "mailto:someone@example.com", "not a url", "https://xn--bcher-kva.example/", "https://bücher.de/",
        "https://foo.blogspot.com/", "https://a.b.c.d.e.co.uk/", "https://www.ck/", "https://x.y.ck/", "HTTPS://EXAMPLE.COM/",
        "https://example.com./", "ftp://files.example.net/pub", "https://example.com:99999/", "https://@example.com/",
    ]
    return out


def check_url_filter(tokq, work, shared, warc_urls, psl):
    from datatrove.utils._import_utils import ASSETS_PATH

    failures = 0
    full = datatrove_filter()
    cases = [
        ("datatrove's own cases", datatrove_filter(extra_domains=("blocked.com", "danger.org", "badsubdomain.nice.com")),
         "extra_domains=blocked.com|danger.org|badsubdomain.nice.com",
         ["https://blocked.com/some-sub-url?with=stuff", "https://hey.danger.org/some-sub-url?with=stuff",
          "http://hey.danger.org/some-sub-url?with=stuff", "http://www.danger.org/some-sub-url?with=stuff",
          "https://nice.com/some-sub-url?with=stuff", "https://badsubdomain.nice.com/some-sub-url?with=stuff",
          "https://sdsd.badsubdomain.nice.com/some-sub-url?with=stuff", "https://blocke.dcom/some-sub-url?with=stuff"]),
        ("test and shared WARC URLs", full, "", warc_urls),
        ("generated URLs hitting each rule", full, "", generated_urls(full)),
    ]
    for name, f, extra, urls in cases:
        inp = os.path.join(work, "urls.jsonl")
        with open(inp, "w") as fh:
            for u in urls:
                fh.write(json.dumps({"url": u}) + "\n")
        options = f"lists={ASSETS_PATH}, psl={psl}" + (f", {extra}" if extra else "")
        out = os.path.join(work, "urls-out")
        run_tokq(tokq, FILTER_SQL, {"input": inp, "output": out, "options": options})
        got = {r["_row"]: r["reason"] for r in pq.read_table(out).to_pylist()}
        want = [decide(f, u) for u in urls]
        diffs = [(u, got.get(i), w) for i, (u, w) in enumerate(zip(urls, want)) if got.get(i) != w]
        reasons = {}
        for w in want:
            reasons[w] = reasons.get(w, 0) + 1
        shown = ", ".join(f"{k or 'kept'} {v}" for k, v in sorted(reasons.items(), key=lambda kv: -kv[1]))
        print(f"  {name}: {len(urls) - len(diffs)} of {len(urls)} identical ({shown})")
        for d in diffs[:10]:
            print("    differs (url, tokq, datatrove):", d)
        failures += bool(diffs)
    return failures


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tokq", required=True)
    ap.add_argument("--shared", required=True)
    args = ap.parse_args()
    import tldextract

    psl = os.path.join(os.path.dirname(tldextract.__file__), ".tld_set_snapshot")
    shared_warc = os.path.join(args.shared, "corpora", "web-html", "trafilatura-eval.warc.gz")
    failures = 0
    with tempfile.TemporaryDirectory() as work:
        files = [os.path.join(work, "test.warc.gz"), os.path.join(work, "test.warc")]
        write_warc(files[0], True)
        write_warc(files[1], False)
        print("read_warc against warcio:")
        failures += check_reader(args.tokq, work, files + [shared_warc])
        failures += check_truncated(args.tokq, work, files[0])
        failures += check_truncated(args.tokq, work, files[1])
        urls = [r["url"] for p in files + [shared_warc] for r in warcio_records(p) if r["url"]]
        print("url_filter against datatrove's URLFilter:")
        failures += check_url_filter(args.tokq, work, args.shared, urls, psl)
    if failures:
        sys.exit(f"web parity: {failures} check(s) differ")
    print("web parity: all identical")


if __name__ == "__main__":
    main()

//! The HTTP message inside a WARC record, read as warcio reads it: the status line and headers,
//! then the payload with chunked transfer-encoding and gzip, deflate or brotli content-encoding
//! undone. Like warcio, a body that does not decode is given as it is stored, never dropped.

use std::borrow::Cow;
use std::io::Read;

use super::warc::fields;

/// Decoded payloads stop growing here: a decompression bomb must not take the process down.
pub const MAX_DECODED: u64 = 256 << 20;

/// A parsed HTTP message.
#[derive(Debug)]
pub struct Message<'a> {
    /// The status code of a response (`None` for a request or an unreadable status line).
    pub status: Option<u16>,
    headers: Vec<(String, String)>,
    /// The body as stored in the record.
    pub body: &'a [u8],
}

/// Where the header block ends: after the first empty line (`\r\n\r\n` or `\n\n`).
fn header_end(block: &[u8]) -> Option<(usize, usize)> {
    let mut line_start = 0;
    for (i, &b) in block.iter().enumerate() {
        if b == b'\n' {
            let line = &block[line_start..i];
            if line.is_empty() || line == b"\r" {
                return Some((line_start, i + 1));
            }
            line_start = i + 1;
        }
    }
    None
}

impl<'a> Message<'a> {
    /// Parses an HTTP message at the start of a record's block. `None` when the block does not
    /// begin with an HTTP status or request line.
    pub fn parse(block: &'a [u8]) -> Option<Self> {
        let (head_len, body_start) = header_end(block).unwrap_or((block.len(), block.len()));
        let head = String::from_utf8_lossy(&block[..head_len]);
        let (first, rest) = head.split_once('\n').unwrap_or((&head, ""));
        let first = first.trim_end_matches('\r');
        let status = if first.starts_with("HTTP/") {
            first.split_whitespace().nth(1).and_then(|c| c.get(..3)).and_then(|c| c.parse().ok())
        } else if first.split_whitespace().nth(2).is_some_and(|p| p.starts_with("HTTP/")) {
            None
        } else {
            return None;
        };
        Some(Self { status, headers: fields(rest), body: &block[body_start..] })
    }

    /// A header's value; names compare without case, the first occurrence wins.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(n, _)| n.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str())
    }

    /// The payload: de-chunked when the message says `Transfer-Encoding: chunked`, then
    /// decompressed for `Content-Encoding` gzip, x-gzip, deflate (zlib or raw) or br.
    pub fn payload(&self) -> Cow<'a, [u8]> {
        let chunked = self.header("Transfer-Encoding").is_some_and(|t| t.eq_ignore_ascii_case("chunked"));
        let body: Cow<'a, [u8]> = if chunked { Cow::Owned(dechunk(self.body)) } else { Cow::Borrowed(self.body) };
        let decoded = match self.header("Content-Encoding").map(str::to_ascii_lowercase).as_deref() {
            Some("gzip" | "x-gzip") => decompress(&body, Codec::Gzip),
            Some("deflate") => decompress(&body, Codec::Zlib).or_else(|| decompress(&body, Codec::Deflate)),
            Some("br") => decompress(&body, Codec::Brotli),
            _ => None,
        };
        decoded.map(Cow::Owned).unwrap_or(body)
    }
}

#[derive(Clone, Copy)]
enum Codec {
    Gzip,
    Zlib,
    Deflate,
    Brotli,
}

/// Decompresses a body; `None` when it fails before giving any byte (warcio's fallback for a
/// mislabelled payload: keep it as stored). A body that fails later keeps what decoded.
fn decompress(body: &[u8], codec: Codec) -> Option<Vec<u8>> {
    let reader: Box<dyn Read + '_> = match codec {
        Codec::Gzip => Box::new(flate2::read::GzDecoder::new(body)),
        Codec::Zlib => Box::new(flate2::read::ZlibDecoder::new(body)),
        Codec::Deflate => Box::new(flate2::read::DeflateDecoder::new(body)),
        Codec::Brotli => Box::new(brotli_decompressor::Decompressor::new(body, 4096)),
    };
    let mut out = Vec::new();
    let failed = reader.take(MAX_DECODED).read_to_end(&mut out).is_err();
    (!failed || !out.is_empty()).then_some(out)
}

/// A chunk-size line as Python's `int(text, 16)` reads it (spaces, a sign, `0x`, `_` between
/// digits), without extensions after `;`.
fn chunk_size(line: &[u8]) -> Option<u64> {
    let text = std::str::from_utf8(line.strip_suffix(b"\r\n")?).ok()?;
    let text = text.split(';').next()?.trim_matches(|c: char| c.is_ascii_whitespace());
    let text = text.strip_prefix('+').unwrap_or(text);
    let text = text.strip_prefix("0x").or_else(|| text.strip_prefix("0X")).unwrap_or(text);
    if text.is_empty() || text.starts_with('_') || text.ends_with('_') || text.contains("__") {
        return None;
    }
    u64::from_str_radix(&text.replace('_', ""), 16).ok().filter(|&n| n <= 1 << 31)
}

/// Undoes chunked transfer-encoding as warcio does: where a chunk header or terminator is
/// malformed, the rest is taken as it is (servers send unchunked bodies under a chunked
/// header); a body cut inside a chunk keeps what it has.
fn dechunk(body: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(body.len());
    let mut pos = 0;
    loop {
        // warcio reads a chunk header with readline(64).
        let window = &body[pos..body.len().min(pos + 64)];
        let line_end = pos + window.iter().position(|&b| b == b'\n').map_or(window.len(), |i| i + 1);
        let line = &body[pos..line_end];
        let Some(size) = chunk_size(line) else {
            out.extend_from_slice(&body[pos..]);
            return out;
        };
        if size == 0 {
            if body.get(line_end..line_end + 2) != Some(b"\r\n".as_slice()) {
                // The two bytes warcio read to check are gone; the rest is kept.
                out.extend_from_slice(line);
                out.extend_from_slice(body.get(line_end + 2..).unwrap_or_default());
            }
            return out;
        }
        let data_end = line_end.saturating_add(size as usize).min(body.len());
        let data = &body[line_end..data_end];
        if data_end - line_end < size as usize {
            out.extend_from_slice(data);
            return out;
        }
        if body.get(data_end..data_end + 2) != Some(b"\r\n".as_slice()) {
            out.extend_from_slice(line);
            out.extend_from_slice(data);
            out.extend_from_slice(body.get(data_end + 2..).unwrap_or_default());
            return out;
        }
        out.extend_from_slice(data);
        pos = data_end + 2;
    }
}

#[cfg(test)]
mod tests {
    use std::io::Write;

    use super::*;

    fn response(headers: &str, body: &[u8]) -> Vec<u8> {
        let mut v = format!("HTTP/1.1 200 OK\r\n{headers}\r\n").into_bytes();
        v.extend_from_slice(body);
        v
    }

    #[test]
    fn status_headers_and_plain_body() {
        let block = response("Content-Type: text/html; charset=utf-8\r\n", b"<p>hi</p>");
        let m = Message::parse(&block).unwrap();
        assert_eq!(m.status, Some(200));
        assert_eq!(m.header("content-type"), Some("text/html; charset=utf-8"));
        assert_eq!(&*m.payload(), b"<p>hi</p>");
        assert!(Message::parse(b"not http at all").is_none());
        assert_eq!(Message::parse(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n").unwrap().status, None);
    }

    #[test]
    fn chunked_and_gzip() {
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        gz.write_all(b"hello chunked gzip world").unwrap();
        let gz = gz.finish().unwrap();
        let mut chunked = Vec::new();
        for part in gz.chunks(7) {
            chunked.extend_from_slice(format!("{:x}\r\n", part.len()).as_bytes());
            chunked.extend_from_slice(part);
            chunked.extend_from_slice(b"\r\n");
        }
        chunked.extend_from_slice(b"0\r\n\r\n");
        let block = response("Transfer-Encoding: chunked\r\nContent-Encoding: gzip\r\n", &chunked);
        assert_eq!(&*Message::parse(&block).unwrap().payload(), b"hello chunked gzip world");
    }

    #[test]
    fn deflate_raw_and_zlib_and_brotli() {
        let mut z = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::default());
        z.write_all(b"zlib body").unwrap();
        let block = response("Content-Encoding: deflate\r\n", &z.finish().unwrap());
        assert_eq!(&*Message::parse(&block).unwrap().payload(), b"zlib body");
        let mut d = flate2::write::DeflateEncoder::new(Vec::new(), flate2::Compression::default());
        d.write_all(b"raw deflate body").unwrap();
        let block = response("Content-Encoding: deflate\r\n", &d.finish().unwrap());
        assert_eq!(&*Message::parse(&block).unwrap().payload(), b"raw deflate body");
        // "hello" compressed by brotli at quality 11.
        let br = [0x0b, 0x02, 0x80, 0x68, 0x65, 0x6c, 0x6c, 0x6f, 0x03];
        let block = response("Content-Encoding: br\r\n", &br);
        assert_eq!(&*Message::parse(&block).unwrap().payload(), b"hello");
    }

    #[test]
    fn mislabelled_bodies_are_kept() {
        let block = response("Content-Encoding: gzip\r\n", b"not gzip");
        assert_eq!(&*Message::parse(&block).unwrap().payload(), b"not gzip");
        let block = response("Transfer-Encoding: chunked\r\n", b"plain body");
        assert_eq!(&*Message::parse(&block).unwrap().payload(), b"plain body");
        let block = response("Transfer-Encoding: chunked\r\n", b"4\r\nabcd\r\n3\r\nxy");
        assert_eq!(&*Message::parse(&block).unwrap().payload(), b"abcdxy", "cut inside a chunk");
    }
}

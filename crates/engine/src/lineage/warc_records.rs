//! WARC records read one at a time from a file as stored, with the byte offset of each: for a
//! `.warc.gz` (one gzip member per record, as Common Crawl writes them) the offset of the
//! record's member, so that `_offset` seeks to it exactly as Common Crawl's index does; for a
//! plain `.warc` the offset of its `WARC/` line. Memory holds one record at a time.

use std::pin::Pin;
use std::task::{ready, Context, Poll};

use async_compression::tokio::bufread::GzipDecoder;
use tokio::io::{AsyncBufRead, AsyncBufReadExt, AsyncRead, AsyncReadExt, BufReader, ReadBuf};
use tokq_core::web::warc::Header;
use tokq_core::TokqError;

use super::source::ByteReader;

/// A header block longer than this is not a WARC header.
const MAX_HEADER: u64 = 1 << 20;
/// Records with larger blocks are refused: a row's payload must fit an Arrow binary array.
pub const MAX_BLOCK: u64 = 1 << 30;
const GZIP_MAGIC: &[u8] = &[0x1f, 0x8b, 0x08];

/// A reader that counts the bytes taken from it: its position in the file as stored.
pub struct Counting {
    inner: ByteReader,
    pos: u64,
}

impl AsyncRead for Counting {
    fn poll_read(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<std::io::Result<()>> {
        let before = buf.filled().len();
        ready!(self.inner.as_mut().poll_read(cx, buf))?;
        self.pos += (buf.filled().len() - before) as u64;
        Poll::Ready(Ok(()))
    }
}

impl AsyncBufRead for Counting {
    fn poll_fill_buf(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<&[u8]>> {
        self.get_mut().inner.as_mut().poll_fill_buf(cx)
    }

    fn consume(mut self: Pin<&mut Self>, amt: usize) {
        self.pos += amt as u64;
        self.inner.as_mut().consume(amt)
    }
}

/// One record: where it starts, its index in the file, its header and its block.
pub struct Record<'a> {
    pub offset: u64,
    pub index: u64,
    pub header: Header,
    pub block: &'a [u8],
}

/// The records of one file, in order.
pub struct Records {
    uri: String,
    gzip: bool,
    /// The file between gzip members (or a plain file).
    raw: Option<Counting>,
    /// The gzip member being read, and where it starts.
    member: Option<(BufReader<GzipDecoder<Counting>>, u64)>,
    next_index: u64,
    /// After a bad record: find the next record before reading on.
    resync: bool,
    /// The current record's block; kept between records, so that pages do not each cost a
    /// fresh allocation (and its page faults).
    block: Vec<u8>,
}

fn io_cause(e: std::io::Error) -> String {
    match e.kind() {
        std::io::ErrorKind::UnexpectedEof => "the file ends inside this record: it is truncated".into(),
        _ => format!("cannot decompress the record: {e}"),
    }
}

/// Takes the CR and LF bytes before a record (and the two blank lines after one).
async fn skip_newlines<R: AsyncBufRead + Unpin>(r: &mut R) -> std::io::Result<()> {
    loop {
        let buf = r.fill_buf().await?;
        let n = buf.iter().take_while(|&&b| b == b'\r' || b == b'\n').count();
        if n == 0 {
            return Ok(());
        }
        r.consume(n);
    }
}

/// Reads a record's header and its block into `block`; `None` at the end of the stream.
async fn read_record<R: AsyncBufRead + Unpin>(r: &mut R, block: &mut Vec<u8>) -> Result<Option<Header>, String> {
    skip_newlines(r).await.map_err(io_cause)?;
    let mut head = Vec::new();
    loop {
        let before = head.len();
        let n = (&mut *r).take(MAX_HEADER).read_until(b'\n', &mut head).await.map_err(io_cause)?;
        if n == 0 {
            return if head.is_empty() { Ok(None) } else { Err("the file ends inside a record header: it is truncated".into()) };
        }
        let line = &head[before..];
        if line == b"\r\n" || line == b"\n" {
            head.truncate(before);
            break;
        }
        if head.len() as u64 >= MAX_HEADER {
            return Err("no end of the record header within 1 MiB: this is not a WARC file, or it is corrupt".into());
        }
    }
    let header = Header::parse(&head)?;
    let len = header.content_length()?;
    if len > MAX_BLOCK {
        tokio::io::copy(&mut (&mut *r).take(len), &mut tokio::io::sink()).await.map_err(io_cause)?;
        skip_newlines(r).await.map_err(io_cause)?;
        return Err(format!("the record's block has {len} bytes, more than tokq reads in one row (1 GiB)"));
    }
    block.clear();
    let got = (&mut *r).take(len).read_to_end(block).await.map_err(io_cause)? as u64;
    if got < len {
        return Err(format!("the file ends inside this record ({got} of its {len} bytes): it is truncated"));
    }
    skip_newlines(r).await.map_err(io_cause)?;
    Ok(Some(header))
}

/// Takes bytes up to the next occurrence of `marker` (or the end), after the current byte.
async fn seek_marker(r: &mut Counting, marker: &[u8]) -> std::io::Result<()> {
    let mut first = true;
    loop {
        let buf = r.fill_buf().await?;
        if buf.is_empty() {
            return Ok(());
        }
        let from = usize::from(first);
        first = false;
        match memchr::memmem::find(&buf[from.min(buf.len())..], marker) {
            Some(i) => {
                r.consume(from + i);
                return Ok(());
            }
            // Keep a possible partial marker at the end of the buffer.
            None => {
                let keep = (marker.len() - 1).min(buf.len());
                let n = (buf.len() - keep).max(from.min(buf.len()));
                r.consume(n.max(1));
            }
        }
    }
}

impl Records {
    pub fn new(reader: ByteReader, uri: String) -> Self {
        let gzip = uri.ends_with(".gz");
        Self { uri, gzip, raw: Some(Counting { inner: reader, pos: 0 }), member: None, next_index: 0, resync: false, block: Vec::new() }
    }

    fn bad(&mut self, offset: u64, cause: String) -> TokqError {
        self.next_index += 1;
        self.resync = true;
        TokqError::BadRecord { file: self.uri.clone(), offset, cause }
    }

    fn raw(&mut self) -> &mut Counting {
        if let Some((member, _)) = self.member.take() {
            self.raw = Some(member.into_inner().into_inner());
        }
        self.raw.as_mut().expect("a WARC reader always holds its file")
    }

    /// The next record; `Err` for a truncated or corrupt one, after which reading on skips to
    /// the next record that can be found.
    pub async fn next(&mut self) -> Result<Option<Record<'_>>, TokqError> {
        if std::mem::take(&mut self.resync) {
            let (gzip, uri) = (self.gzip, self.uri.clone());
            let marker: &[u8] = if gzip { GZIP_MAGIC } else { b"WARC/" };
            seek_marker(self.raw(), marker).await.map_err(|e| TokqError::Io { uri, cause: e.to_string() })?;
        }
        if !self.gzip {
            let uri = self.uri.clone();
            let mut block = std::mem::take(&mut self.block);
            let raw = self.raw();
            skip_newlines(raw).await.map_err(|e| TokqError::Io { uri, cause: e.to_string() })?;
            let offset = raw.pos;
            let read = read_record(raw, &mut block).await;
            self.block = block;
            return match read {
                Ok(r) => Ok(r.map(|header| self.record(offset, header))),
                Err(cause) => Err(self.bad(offset, cause)),
            };
        }
        loop {
            if self.member.is_none() {
                let mut raw = self.raw.take().expect("a WARC reader always holds its file");
                let start = raw.pos;
                // Only a gzip header starts a member: anything else is refused before the
                // decoder takes bytes, so that skipping can find the next member after it.
                let head = match raw.fill_buf().await {
                    Ok([]) => None,
                    // A buffer may end inside the magic bytes; the decoder checks the rest.
                    Ok(buf) if GZIP_MAGIC.starts_with(&buf[..buf.len().min(GZIP_MAGIC.len())]) => Some(Ok(())),
                    Ok(buf) => Some(Err(format!("expected a gzip member (1f 8b 08), found {:02x?}", &buf[..buf.len().min(3)]))),
                    Err(e) => Some(Err(e.to_string())),
                };
                self.raw = Some(raw);
                match head {
                    None => return Ok(None),
                    Some(Err(cause)) => return Err(self.bad(start, cause)),
                    Some(Ok(())) => {}
                }
                let raw = self.raw.take().expect("the file was just put back");
                self.member = Some((BufReader::new(GzipDecoder::new(raw)), start));
            }
            let (member, start) = self.member.as_mut().expect("a member was just opened");
            let start = *start;
            match read_record(member, &mut self.block).await {
                Ok(Some(header)) => return Ok(Some(self.record(start, header))),
                // The member is done: the next one starts where it ended.
                Ok(None) => {
                    self.raw();
                }
                Err(cause) => return Err(self.bad(start, cause)),
            }
        }
    }

    fn record(&mut self, offset: u64, header: Header) -> Record<'_> {
        let index = self.next_index;
        self.next_index += 1;
        Record { offset, index, header, block: &self.block }
    }
}

#[cfg(test)]
mod tests {
    use std::io::Write;

    use super::*;

    const ONE: &str = "WARC/1.0\r\nWARC-Type: response\r\nWARC-Target-URI: http://a.org/\r\nContent-Length: 5\r\n\r\nhello\r\n\r\n";
    const TWO: &str = "WARC/1.0\r\nWARC-Type: resource\r\nContent-Length: 3\r\n\r\nabc\r\n\r\n";

    fn reader(bytes: Vec<u8>) -> ByteReader {
        Box::pin(std::io::Cursor::new(bytes))
    }

    fn gz(text: &str) -> Vec<u8> {
        let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        e.write_all(text.as_bytes()).unwrap();
        e.finish().unwrap()
    }

    async fn all(bytes: Vec<u8>, uri: &str) -> Vec<Result<(u64, u64, String, usize), String>> {
        let mut r = Records::new(reader(bytes), uri.into());
        let mut out = Vec::new();
        loop {
            match r.next().await {
                Ok(Some(rec)) => out.push(Ok((rec.offset, rec.index, rec.header.record_type(), rec.block.len()))),
                Ok(None) => return out,
                Err(e) => out.push(Err(e.to_string())),
            }
        }
    }

    #[tokio::test]
    async fn plain_records_and_offsets() {
        let got = all(format!("{ONE}{TWO}").into_bytes(), "f.warc").await;
        assert_eq!(got, vec![Ok((0, 0, "response".into(), 5)), Ok((ONE.len() as u64, 1, "resource".into(), 3))]);
    }

    #[tokio::test]
    async fn gzip_members_give_member_offsets() {
        let (a, b) = (gz(ONE), gz(TWO));
        let got = all([a.clone(), b].concat(), "f.warc.gz").await;
        assert_eq!(got, vec![Ok((0, 0, "response".into(), 5)), Ok((a.len() as u64, 1, "resource".into(), 3))]);
        let whole = all(gz(&format!("{ONE}{TWO}")), "f.warc.gz").await;
        assert_eq!(whole.len(), 2, "one member holding two records");
    }

    #[tokio::test]
    async fn truncated_record_is_named_then_skipped() {
        let cut = &ONE[..ONE.len() - 8];
        let got = all(format!("{TWO}{cut}").into_bytes(), "f.warc").await;
        assert_eq!(got[0], Ok((0, 0, "resource".into(), 3)));
        assert_eq!(got[1], Err(format!("f.warc: offset {}: the file ends inside this record (1 of its 5 bytes): it is truncated", TWO.len())));
        assert_eq!(got.len(), 2);
        let (a, b) = (gz(TWO), gz(ONE));
        let got = all([a.clone(), b[..b.len() - 10].to_vec()].concat(), "f.warc.gz").await;
        assert_eq!(got.len(), 2, "{got:?}");
        assert!(got[1].as_ref().unwrap_err().starts_with(&format!("f.warc.gz: offset {}: ", a.len())), "{got:?}");
        let got = all([a.clone(), b"garbage".to_vec(), b.clone()].concat(), "f.warc.gz").await;
        assert_eq!(got.len(), 3, "{got:?}");
        assert!(got[1].is_err());
        assert_eq!(got[2].as_ref().unwrap().1, 2, "the index counts the bad record");
    }

    #[tokio::test]
    async fn buffers_may_end_anywhere() {
        let (a, b) = (gz(ONE), gz(TWO));
        let tiny: ByteReader = Box::pin(tokio::io::BufReader::with_capacity(1, std::io::Cursor::new([a.clone(), b].concat())));
        let mut r = Records::new(tiny, "f.warc.gz".into());
        assert_eq!(r.next().await.unwrap().unwrap().offset, 0);
        assert_eq!(r.next().await.unwrap().unwrap().offset, a.len() as u64);
        assert!(r.next().await.unwrap().is_none());
    }

    #[tokio::test]
    async fn not_a_warc_is_named() {
        let got = all(b"{\"json\": true}\n\n".to_vec(), "f.warc").await;
        assert!(got[0].as_ref().unwrap_err().contains("expected a WARC record"), "{got:?}");
    }
}

#[cfg(test)]
mod fuzz {
    use proptest::prelude::*;

    use super::*;

    fn pieces() -> impl Strategy<Value = Vec<u8>> {
        let piece = prop::sample::select(vec![
            &b"WARC/1.0\r\n"[..], b"WARC-Type: response\r\n", b"Content-Length: 4\r\n", b"Content-Length: 2000000000\r\n",
            b"Content-Length: -1\r\n", b"\r\n", b"\n", b"abcd", b"\x1f\x8b\x08", b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\x03", b"\x00\xff",
        ]);
        prop::collection::vec(prop_oneof![piece.prop_map(<[u8]>::to_vec), prop::collection::vec(any::<u8>(), 0..30)], 0..30)
            .prop_map(|v| v.concat())
    }

    /// Reads every record, skipping bad ones, as `--on-bad-row skip` does; the loop must end.
    fn drain(bytes: Vec<u8>, uri: &str) {
        let runtime = tokio::runtime::Builder::new_current_thread().build().expect("a runtime");
        runtime.block_on(async {
            let len = bytes.len();
            let mut r = Records::new(Box::pin(std::io::Cursor::new(bytes)), uri.into());
            for _ in 0..=len + 2 {
                match r.next().await {
                    Ok(None) => return,
                    Ok(Some(_)) | Err(_) => {}
                }
            }
            panic!("reading did not end");
        });
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(300))]

        #[test]
        fn reading_never_panics_or_hangs(bytes in pieces(), gz in any::<bool>()) {
            let bytes = if gz {
                use std::io::Write;
                let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
                e.write_all(&bytes).unwrap();
                let mut v = e.finish().unwrap();
                v.extend_from_slice(&bytes);
                v
            } else {
                bytes
            };
            drain(bytes, if gz { "f.warc.gz" } else { "f.warc" });
        }
    }
}

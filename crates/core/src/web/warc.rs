//! WARC record headers (WARC/1.0 and 1.1, ISO 28500): the version line and named fields, read
//! as leniently as warcio reads them (LF or CRLF line ends, continuation lines, any case).

/// A record's header block.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Header {
    /// `WARC/1.0` or `WARC/1.1`, as the record gives it.
    pub version: String,
    fields: Vec<(String, String)>,
}

/// Header lines, as a parser sees them: ends stripped, continuation lines folded into the
/// field before them.
pub(crate) fn fields(lines: &str) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = Vec::new();
    for line in lines.split('\n').map(|l| l.strip_suffix('\r').unwrap_or(l)) {
        if line.starts_with([' ', '\t']) {
            if let Some((_, value)) = out.last_mut() {
                value.push(' ');
                value.push_str(line.trim());
            }
            continue;
        }
        if let Some((name, value)) = line.split_once(':') {
            out.push((name.trim().to_string(), value.trim().to_string()));
        }
    }
    out
}

impl Header {
    /// Parses a header block (the version line through the last field, without the blank
    /// line). The error says what is wrong, for `file: offset N: cause`.
    pub fn parse(block: &[u8]) -> Result<Self, String> {
        let text = String::from_utf8_lossy(block);
        let (first, rest) = text.split_once('\n').unwrap_or((&text, ""));
        let version = first.trim_end_matches('\r').trim();
        if !version.starts_with("WARC/") {
            let shown: String = version.chars().take(40).collect();
            return Err(format!("expected a WARC record ('WARC/1.0'), found '{shown}'"));
        }
        Ok(Self { version: version.to_string(), fields: fields(rest) })
    }

    /// A field's value; names compare without case, the first occurrence wins.
    pub fn get(&self, name: &str) -> Option<&str> {
        self.fields.iter().find(|(n, _)| n.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str())
    }

    /// `Content-Length`, the size of the record's block.
    pub fn content_length(&self) -> Result<u64, String> {
        let v = self.get("Content-Length").ok_or("the record has no Content-Length")?;
        v.parse().map_err(|_| format!("Content-Length '{v}' is not a number"))
    }

    /// `WARC-Type`, lowercased.
    pub fn record_type(&self) -> String {
        self.get("WARC-Type").unwrap_or_default().to_ascii_lowercase()
    }

    /// `WARC-Target-URI` as warcio gives it: without the angle brackets Wget 1.19 put around it,
    /// and with spaces (invalid in a URI) written as `%20`.
    pub fn target_uri(&self) -> Option<std::borrow::Cow<'_, str>> {
        let uri = self.get("WARC-Target-URI")?;
        let uri = match uri.strip_prefix('<').and_then(|u| u.strip_suffix('>')) {
            Some(inner) => inner,
            None => uri,
        };
        Some(if uri.contains(' ') { uri.replace(' ', "%20").into() } else { uri.into() })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_fields_leniently() {
        let h = Header::parse(b"WARC/1.1\r\nWARC-Type: response\r\nwarc-target-uri: <http://x.org/>\nContent-Length: 12\r\nX-Long: a\r\n  b\r\n").unwrap();
        assert_eq!(h.version, "WARC/1.1");
        assert_eq!(h.record_type(), "response");
        assert_eq!(h.target_uri().as_deref(), Some("http://x.org/"));
        let spaced = Header::parse(b"WARC/1.0\r\nWARC-Target-URI: http://x.org/a b\r\n").unwrap();
        assert_eq!(spaced.target_uri().as_deref(), Some("http://x.org/a%20b"));
        assert_eq!(h.content_length(), Ok(12));
        assert_eq!(h.get("x-long"), Some("a b"));
    }

    #[test]
    fn names_what_is_wrong() {
        assert!(Header::parse(b"HTTP/1.1 200 OK\r\n").unwrap_err().contains("'HTTP/1.1 200 OK'"));
        let h = Header::parse(b"WARC/1.0\r\nContent-Length: x\r\n").unwrap();
        assert_eq!(h.content_length().unwrap_err(), "Content-Length 'x' is not a number");
    }
}

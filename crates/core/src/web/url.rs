//! A URL's host as tldextract finds it: leniently, without a full URL parser, so that the
//! malformed URLs of a crawl split the way datatrove's URL filter sees them.

/// The characters of a URL scheme (Python's `urllib.parse.scheme_chars`).
fn is_scheme_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.')
}

/// The URL after `scheme://` (or a leading `//`); unchanged when it has no such prefix.
fn schemeless(url: &str) -> &str {
    match url.find("//") {
        Some(0) => &url[2..],
        Some(at) if at >= 2 && url[..at].ends_with(':') && url[..at - 1].chars().all(is_scheme_char) => &url[at + 2..],
        _ => url,
    }
}

/// The host of a URL-like string, case kept: no scheme, user, port, path, query or fragment, and
/// no trailing root dot. An IPv6 host keeps its brackets. Empty when there is none.
pub fn host(url: &str) -> &str {
    let rest = schemeless(url);
    let authority = rest.split(['/', '?', '#']).next().unwrap_or("");
    let after_user = authority.rsplit('@').next().unwrap_or("");
    if after_user.starts_with('[') {
        if let Some(end) = after_user.find(']') {
            return &after_user[..=end];
        }
    }
    let name = after_user.split(':').next().unwrap_or("");
    crate::text::py::strip(name).trim_end_matches(['.', '\u{3002}', '\u{ff0e}', '\u{ff61}'])
}

/// Whether a host is an IPv4 address as tldextract recognises one (four decimal parts 0-255,
/// no leading zeros).
pub fn looks_like_ipv4(host: &str) -> bool {
    let parts: Vec<&str> = host.split('.').collect();
    parts.len() == 4
        && parts.iter().all(|p| {
            !p.is_empty() && p.len() <= 3 && p.bytes().all(|b| b.is_ascii_digit()) && (p.len() == 1 || !p.starts_with('0'))
                && p.parse::<u16>().is_ok_and(|v| v <= 255)
        })
}

/// Whether a bracketed host holds an IPv6 address.
pub fn is_ipv6_literal(host: &str) -> bool {
    host.len() >= 4
        && host.starts_with('[')
        && host.ends_with(']')
        && host[1..host.len() - 1].parse::<std::net::Ipv6Addr>().is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hosts_as_tldextract_finds_them() {
        for (url, want) in [
            ("https://user:pw@Forums.BBC.co.uk:8080/path?q#f", "Forums.BBC.co.uk"),
            ("//cdn.example.com/x", "cdn.example.com"),
            ("example.com/path", "example.com"),
            ("http://[::1]:80/", "[::1]"),
            ("mailto://a.b.", "a.b"),
            ("ht tp://x.com/", "ht tp"),
            ("https://x.com?a=b", "x.com"),
            ("", ""),
        ] {
            assert_eq!(host(url), want, "{url}");
        }
    }

    #[test]
    fn ip_addresses() {
        assert!(looks_like_ipv4("127.0.0.1"));
        assert!(!looks_like_ipv4("256.1.1.1"));
        assert!(!looks_like_ipv4("01.1.1.1"));
        assert!(!looks_like_ipv4("1.1.1"));
        assert!(is_ipv6_literal("[::1]"));
        assert!(!is_ipv6_literal("[nope]"));
    }
}

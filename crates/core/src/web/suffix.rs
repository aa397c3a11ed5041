//! Public suffixes as tldextract 5 matches them (datatrove's URL filter splits hosts with it):
//! the ICANN section of a Public Suffix List file, labels compared lowercased and with punycode
//! decoded, wildcard and exception rules. Crates implement the standard PSL algorithm, which
//! differs from tldextract's on wildcards and IDNs, and decisions must match datatrove's.
//!
//! The list is data, read from a file (publicsuffix.org's `public_suffix_list.dat`, or the
//! snapshot tldextract ships): a pinned list keeps decisions the same across tokq versions.

use rustc_hash::FxHashMap;

use super::url::{host, is_ipv6_literal, looks_like_ipv4};
use crate::error::TokqError;
use crate::load;

/// Where tldextract's list ends its ICANN section.
const PRIVATE_SECTION: &str = "// ===BEGIN PRIVATE DOMAINS===";

#[derive(Default, Debug)]
struct Node {
    children: FxHashMap<Box<str>, Node>,
    end: bool,
}

/// The ICANN public suffixes of a list.
#[derive(Debug)]
pub struct Suffixes {
    root: Node,
}

static CACHE: load::Cache<Suffixes> = load::Cache::new();

/// The suffix list at a path or URI, parsed once per process (`url_domain` and `url_filter` share it).
pub fn cached(uri: &str) -> Result<std::sync::Arc<Suffixes>, TokqError> {
    CACHE.get_or_load(uri, |u| Suffixes::parse(&String::from_utf8_lossy(&load::read_bytes(u)?)))
}

/// A host split as tldextract splits it (case kept).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Parts {
    /// Everything left of the domain.
    pub subdomain: String,
    /// The registrable name, without its suffix.
    pub domain: String,
    /// The public suffix.
    pub suffix: String,
}

impl Parts {
    /// `domain.suffix`, or empty when either is missing (tldextract's `registered_domain`).
    pub fn registered_domain(&self) -> String {
        if self.domain.is_empty() || self.suffix.is_empty() {
            return String::new();
        }
        format!("{}.{}", self.domain, self.suffix)
    }

    /// The whole host when it has a domain and a suffix, else empty (tldextract's `fqdn`).
    pub fn fqdn(&self) -> String {
        if self.domain.is_empty() || self.suffix.is_empty() {
            return String::new();
        }
        [&self.subdomain, &self.domain, &self.suffix].iter().filter(|p| !p.is_empty()).map(|p| p.as_str()).collect::<Vec<_>>().join(".")
    }
}

/// The first word of a rule line as tldextract's pattern `^[.*!]*\w\S*` takes it.
fn rule_of(line: &str) -> Option<&str> {
    let body = line.trim_start_matches(['.', '*', '!']);
    let first = body.chars().next()?;
    if !(first.is_alphanumeric() || first == '_') {
        return None;
    }
    let end = line.find(char::is_whitespace).unwrap_or(line.len());
    Some(&line[..end])
}

/// A label as tldextract compares it: lowercased, punycode (`xn--`) decoded where it decodes.
fn lookup_label(label: &str) -> std::borrow::Cow<'_, str> {
    let lowered = label.to_lowercase();
    if let Some(code) = lowered.strip_prefix("xn--") {
        if let Some(decoded) = idna::punycode::decode_to_string(code) {
            return decoded.into();
        }
    }
    lowered.into()
}

impl Suffixes {
    /// Parses a Public Suffix List; only its ICANN section counts (tldextract's default).
    pub fn parse(text: &str) -> Result<Self, TokqError> {
        let icann = text.split(PRIVATE_SECTION).next().unwrap_or("");
        let mut root = Node::default();
        for rule in icann.lines().filter_map(rule_of) {
            let mut node = &mut root;
            for label in rule.rsplit('.') {
                node = node.children.entry(label.into()).or_default();
            }
            node.end = true;
        }
        if root.children.is_empty() {
            return Err(TokqError::Argument {
                function: "public suffix list",
                cause: "the file has no suffix rules: give publicsuffix.org's public_suffix_list.dat".into(),
            });
        }
        Ok(Self { root })
    }

    /// The index of the host's first suffix label, if any rule matches.
    fn suffix_index(&self, labels: &[&str]) -> Option<usize> {
        let mut node = &self.root;
        let mut label_idx = labels.len();
        let mut suffix_idx = labels.len();
        for label in labels.iter().rev() {
            let key = lookup_label(label);
            if let Some(next) = node.children.get(key.as_ref()) {
                label_idx -= 1;
                node = next;
                if node.end {
                    suffix_idx = label_idx;
                }
                continue;
            }
            if node.children.contains_key("*") {
                let exception = node.children.contains_key(format!("!{key}").as_str());
                return Some(if exception { label_idx } else { label_idx.saturating_sub(1) });
            }
            break;
        }
        (suffix_idx < labels.len()).then_some(suffix_idx)
    }

    /// Splits a URL's host into subdomain, domain and suffix, as `tldextract.extract(url)` does.
    pub fn split(&self, url: &str) -> Parts {
        let host = host(url).replace(['\u{3002}', '\u{ff0e}', '\u{ff61}'], ".");
        let whole = || Parts { domain: host.clone(), ..Parts::default() };
        if is_ipv6_literal(&host) {
            return whole();
        }
        let labels: Vec<&str> = host.split('.').collect();
        let Some(at) = self.suffix_index(&labels) else {
            if looks_like_ipv4(&host) {
                return whole();
            }
            let last = labels.len() - 1;
            return Parts { subdomain: labels[..last].join("."), domain: labels[last].into(), suffix: String::new() };
        };
        Parts {
            subdomain: labels[..at.saturating_sub(1)].join("."),
            domain: if at > 0 { labels[at - 1].into() } else { String::new() },
            suffix: labels[at..].join("."),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const LIST: &str = "// ===BEGIN ICANN DOMAINS===\ncom\nuk\nco.uk\n*.ck\n!www.ck\norg\n\u{516c}\u{53f8}.cn\ncn\n// ===END ICANN DOMAINS===\n// ===BEGIN PRIVATE DOMAINS===\nblogspot.com\n";

    fn split(url: &str) -> (String, String, String) {
        let s = Suffixes::parse(LIST).unwrap();
        let p = s.split(url);
        (p.subdomain, p.domain, p.suffix)
    }

    #[test]
    fn splits_as_tldextract() {
        let t = |a: &str, b: &str, c: &str| (a.to_string(), b.to_string(), c.to_string());
        assert_eq!(split("http://forums.news.cnn.com/"), t("forums.news", "cnn", "com"));
        assert_eq!(split("http://forums.bbc.co.uk/"), t("forums", "bbc", "co.uk"));
        assert_eq!(split("http://Forums.BBC.CO.UK/"), t("Forums", "BBC", "CO.UK"));
        assert_eq!(split("http://waiterrant.blogspot.com"), t("waiterrant", "blogspot", "com"), "private rules are ignored");
        assert_eq!(split("http://a.b.ck"), t("", "a", "b.ck"), "wildcard");
        assert_eq!(split("http://www.ck"), t("", "www", "ck"), "exception");
        assert_eq!(split("http://localhost:8080"), t("", "localhost", ""));
        assert_eq!(split("http://127.0.0.1/x"), t("", "127.0.0.1", ""));
        assert_eq!(split("http://x.xn--55qx5d.cn"), t("", "x", "xn--55qx5d.cn"), "punycode labels match unicode rules");
        assert_eq!(split("https://com"), t("", "", "com"));
    }

    #[test]
    fn registered_domain_and_fqdn() {
        let s = Suffixes::parse(LIST).unwrap();
        let p = s.split("https://a.b.example.co.uk/");
        assert_eq!((p.registered_domain().as_str(), p.fqdn().as_str()), ("example.co.uk", "a.b.example.co.uk"));
        let p = s.split("http://localhost/");
        assert_eq!((p.registered_domain().as_str(), p.fqdn().as_str()), ("", ""));
    }

    #[test]
    fn an_empty_list_is_refused() {
        assert!(Suffixes::parse("// nothing\n").is_err());
    }
}

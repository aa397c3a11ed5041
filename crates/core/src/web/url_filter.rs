//! datatrove's `URLFilter`: a URL is dropped when its registered domain or its full host is a
//! blocked domain, the URL itself is blocked, a hard banned word is one of its words, enough
//! soft banned words are, or a banned subword occurs in it with punctuation removed. The reasons
//! are datatrove's strings.
//!
//! The block lists are data: datatrove's wheel ships them in its `assets` folder (a 120 MB domain
//! list in `url_filterblacklistsv0_3_0.tar.gz` and three word lists), read from there as they are.
//! Domains and URLs are held as sorted 128-bit hashes (16 bytes each instead of a string set's
//! ~60), so the 4.7 million domains take 75 MB per process.

use aho_corasick::AhoCorasick;
use xxhash_rust::xxh3::xxh3_128;

use super::suffix::{self, Suffixes};
use crate::error::TokqError;
use crate::load;
use crate::quality::params::{Keys, Params};

/// The tarball in datatrove's assets folder that holds the `domains` and `urls` lists.
pub const BLOCKLIST_TARBALL: &str = "url_filterblacklistsv0_3_0.tar.gz";

/// The options as given, before the lists are read.
#[derive(Default)]
struct Given {
    lists: Option<String>,
    psl: Option<String>,
    threshold: Option<usize>,
    /// extra_domains, extra_urls, banned_words, banned_subwords, soft_banned_words.
    extra: [Vec<String>; 5],
}

/// Sets the `I`th extra list from `a|b|c`, empty entries dropped.
fn extra<const I: usize>(g: &mut Given, _: &Params<'_>, _: &str, v: &str) -> Result<(), TokqError> {
    g.extra[I] = v.split('|').filter(|s| !s.is_empty()).map(str::to_string).collect();
    Ok(())
}

const KEYS: &Keys<Given> = &[
    ("lists", |g, _, _, v| {
        g.lists = Some(v.to_string());
        Ok(())
    }),
    ("psl", |g, _, _, v| {
        g.psl = Some(v.to_string());
        Ok(())
    }),
    ("soft_word_threshold", |g, p, k, v| p.count(k, v).map(|x| g.threshold = Some(x))),
    ("extra_domains", extra::<0>),
    ("extra_urls", extra::<1>),
    ("banned_words", extra::<2>),
    ("banned_subwords", extra::<3>),
    ("soft_banned_words", extra::<4>),
];

/// A set of strings held as sorted 128-bit hashes.
#[derive(Debug, Default)]
struct HashSet128(Vec<u128>);

impl HashSet128 {
    fn of<'a>(items: impl Iterator<Item = &'a str>) -> Self {
        let mut v: Vec<u128> = items.map(|s| xxh3_128(s.as_bytes())).collect();
        v.sort_unstable();
        v.dedup();
        Self(v)
    }

    fn contains(&self, s: &str) -> bool {
        self.0.binary_search(&xxh3_128(s.as_bytes())).is_ok()
    }

    fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

/// Lines as Python's text mode yields them (`\n`, `\r\n` and `\r` all end a line), without
/// comment lines (first character `#`), stripped. datatrove's `parse_list(..., do_normalize=False)`.
fn raw_entries(text: &str) -> impl Iterator<Item = &str> {
    py_lines(text).filter(|l| !l.starts_with('#')).map(crate::text::py::strip)
}

/// The lines of a text as Python's text mode reads a file: `\n`, `\r\n` or `\r` ends a line,
/// and each line keeps its ending.
fn py_lines(text: &str) -> impl Iterator<Item = &str> {
    let mut rest = text;
    std::iter::from_fn(move || {
        if rest.is_empty() {
            return None;
        }
        let end = match rest.find(['\n', '\r']) {
            None => rest.len(),
            Some(i) if rest[i..].starts_with("\r\n") => i + 2,
            Some(i) => i + 1,
        };
        let (line, tail) = rest.split_at(end);
        rest = tail;
        Some(line)
    })
}

/// A word as datatrove normalises list entries and URLs: ASCII letters and digits only, lowercased.
fn normalize(text: &str) -> String {
    text.chars().filter(char::is_ascii_alphanumeric).map(|c| c.to_ascii_lowercase()).collect()
}

/// The words of a URL: the runs between non-alphanumeric characters (case kept), as
/// `re.split('[^a-zA-Z0-9]+', url)` gives them, empty ends included.
fn url_words(url: &str) -> Vec<&str> {
    let mut words = Vec::new();
    let mut rest = url;
    loop {
        let Some(start) = rest.find(|c: char| !c.is_ascii_alphanumeric()) else {
            words.push(rest);
            return words;
        };
        words.push(&rest[..start]);
        let after = &rest[start..];
        let end = after.find(|c: char| c.is_ascii_alphanumeric()).unwrap_or(after.len());
        rest = &after[end..];
        if rest.is_empty() {
            words.push("");
            return words;
        }
    }
}

/// A URL filter with datatrove's lists and rules.
#[derive(Debug)]
pub struct UrlFilter {
    suffixes: Option<std::sync::Arc<Suffixes>>,
    domains: HashSet128,
    urls: HashSet128,
    banned_words: Vec<String>,
    soft_banned_words: Vec<String>,
    banned_subwords: Option<AhoCorasick>,
    soft_word_threshold: usize,
}

fn read_text(uri: &str) -> Result<String, TokqError> {
    Ok(String::from_utf8_lossy(&load::read_bytes(uri)?).into_owned())
}

/// The `domains` and `urls` files of datatrove's blocklist tarball.
fn read_tarball(uri: &str) -> Result<(String, String), TokqError> {
    let bytes = load::read_bytes(uri)?;
    let bad = |cause: String| TokqError::Io { uri: uri.to_string(), cause };
    let mut archive = tar::Archive::new(flate2::read::GzDecoder::new(bytes.as_slice()));
    let (mut domains, mut urls) = (None, None);
    for entry in archive.entries().map_err(|e| bad(e.to_string()))? {
        let mut entry = entry.map_err(|e| bad(e.to_string()))?;
        let name = entry.path().map_err(|e| bad(e.to_string()))?.to_string_lossy().into_owned();
        let mut text = Vec::new();
        std::io::Read::read_to_end(&mut entry, &mut text).map_err(|e| bad(e.to_string()))?;
        match name.trim_start_matches("./") {
            "domains" => domains = Some(String::from_utf8_lossy(&text).into_owned()),
            "urls" => urls = Some(String::from_utf8_lossy(&text).into_owned()),
            _ => {}
        }
    }
    match (domains, urls) {
        (Some(d), Some(u)) => Ok((d, u)),
        _ => Err(bad("the tarball has no 'domains' and 'urls' files: give datatrove's assets folder".into())),
    }
}

impl UrlFilter {
    /// A filter from an options string: `lists=DIR` (datatrove's assets folder; without it only
    /// the extra lists count, as `use_integrated_lists=False`), `psl=FILE`, `soft_word_threshold=N`
    /// and extra entries separated by `|` (`extra_domains=a.com|b.org`).
    pub fn from_options(spec: &str) -> Result<Self, TokqError> {
        let params = Params::parse("url_filter", spec)?;
        let Given { lists, psl, threshold, extra } = params.apply(KEYS, Given::default())?;
        let threshold = threshold.unwrap_or(2);
        let [extra_domains, extra_urls, extra_banned, extra_subwords, extra_soft] = extra;
        let (mut domains_text, mut urls_text) = (String::new(), String::new());
        let mut word_texts = [String::new(), String::new(), String::new()];
        if let Some(dir) = lists.as_deref() {
            let dir = dir.trim_end_matches('/');
            (domains_text, urls_text) = read_tarball(&format!("{dir}/{BLOCKLIST_TARBALL}"))?;
            for (text, name) in word_texts.iter_mut().zip(["banned_words.txt", "banned_subwords.txt", "soft_banned_words.txt"]) {
                *text = read_text(&format!("{dir}/{name}"))?;
            }
        }
        let domains = HashSet128::of(raw_entries(&domains_text).chain(extra_domains.iter().map(|e| crate::text::py::strip(e))));
        let urls = HashSet128::of(raw_entries(&urls_text).chain(extra_urls.iter().map(|e| crate::text::py::strip(e))));
        let words = |text: &str, extra: Vec<String>| -> Vec<String> {
            let mut w: Vec<String> = py_lines(text)
                .filter(|l| !l.starts_with('#'))
                .chain(extra.iter().map(String::as_str))
                .map(normalize)
                .collect();
            w.sort_unstable();
            w.dedup();
            w
        };
        let [banned_text, subword_text, soft_text] = &word_texts;
        let subwords: Vec<String> = words(subword_text, extra_subwords).into_iter().filter(|w| !w.is_empty()).collect();
        let banned_subwords = if subwords.is_empty() {
            None
        } else {
            Some(AhoCorasick::new(&subwords).map_err(|e| params.error(format!("banned_subwords: {e}")))?)
        };
        let suffixes = match psl {
            Some(p) => Some(suffix::cached(&p)?),
            None if domains.is_empty() => None,
            None => {
                return Err(params.error(
                    "blocked domains need a public suffix list to find a URL's domain: add psl=FILE \
                     (publicsuffix.org's public_suffix_list.dat, or the .tld_set_snapshot in the tldextract package)"
                        .into(),
                ))
            }
        };
        Ok(Self {
            suffixes,
            domains,
            urls,
            banned_words: words(banned_text, extra_banned),
            soft_banned_words: words(soft_text, extra_soft),
            banned_subwords,
            soft_word_threshold: threshold,
        })
    }

    /// The reason datatrove drops the URL for, or `None` to keep it.
    pub fn check(&self, url: &str) -> Option<&'static str> {
        if let Some(suffixes) = &self.suffixes {
            let parts = suffixes.split(url);
            if self.domains.contains(&parts.registered_domain()) {
                return Some("domain");
            }
            if self.domains.contains(&parts.fqdn()) {
                return Some("subdomain");
            }
        }
        if self.urls.contains(url) {
            return Some("url");
        }
        let words = url_words(url);
        if self.banned_words.iter().any(|w| words.contains(&w.as_str())) {
            return Some("hard_blacklisted");
        }
        let soft = self.soft_banned_words.iter().filter(|w| words.contains(&w.as_str())).count();
        if soft >= self.soft_word_threshold {
            return Some("soft_blacklisted");
        }
        if let Some(ac) = &self.banned_subwords {
            if ac.is_match(&normalize(url)) {
                return Some("blacklisted_subword");
            }
        }
        None
    }
}

static CACHE: load::Cache<UrlFilter> = load::Cache::new();

/// The filter of an options string, built once per process.
pub fn cached(spec: &str) -> Result<std::sync::Arc<UrlFilter>, TokqError> {
    CACHE.get_or_load(spec, UrlFilter::from_options)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_end_as_in_python_text_mode() {
        assert_eq!(py_lines("a\r\nb\rc\nd").collect::<Vec<_>>(), vec!["a\r\n", "b\r", "c\n", "d"]);
        assert_eq!(raw_entries("# c\n x.com \r\n#y\n").collect::<Vec<_>>(), vec!["x.com"]);
    }

    #[test]
    fn url_words_split_as_python() {
        assert_eq!(url_words("https://a.b/c"), vec!["https", "a", "b", "c"]);
        assert_eq!(url_words("https://a.b/"), vec!["https", "a", "b", ""]);
        assert_eq!(url_words("/x"), vec!["", "x"]);
        assert_eq!(url_words(""), vec![""]);
    }

    #[test]
    fn rules_and_reasons() {
        let f = UrlFilter::from_options(
            "extra_domains=blocked.com|badsub.nice.com, extra_urls=https://x.org/p, banned_words=Porn, \
             soft_banned_words=hot|girls, banned_subwords=xxx, psl=/nonexistent",
        );
        assert!(f.is_err(), "a missing list file fails");
        let dir = tempfile::tempdir().unwrap();
        let psl = dir.path().join("psl.dat");
        std::fs::write(&psl, "com\norg\n").unwrap();
        let f = UrlFilter::from_options(&format!(
            "extra_domains=blocked.com|badsub.nice.com, extra_urls=https://x.org/p, banned_words=Porn, \
             soft_banned_words=hot|girls, banned_subwords=xxx, psl={}",
            psl.display()
        ))
        .unwrap();
        for (url, want) in [
            ("https://www.blocked.com/a", Some("domain")),
            ("https://badsub.nice.com/a", Some("subdomain")),
            ("https://deeper.badsub.nice.com/a", None),
            ("https://x.org/p", Some("url")),
            ("https://x.org/porn/", Some("hard_blacklisted")),
            ("https://x.org/PORN/", None),
            ("https://x.org/hot-girls", Some("soft_blacklisted")),
            ("https://x.org/hot", None),
            ("https://x.org/a-X.X-X", Some("blacklisted_subword")),
        ] {
            assert_eq!(f.check(url), want, "{url}");
        }
    }

    #[test]
    fn blocked_domains_need_a_suffix_list() {
        let e = UrlFilter::from_options("extra_domains=a.com").unwrap_err().to_string();
        assert!(e.contains("psl=FILE"), "{e}");
        assert!(UrlFilter::from_options("nope=1").is_err());
    }
}

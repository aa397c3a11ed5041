//! URLs in SQL: `url_filter` (datatrove's URLFilter, with its reasons), `url_host` and
//! `url_domain`, each a few lines over `tokq_core::web`.
//!
//! Block lists and the public suffix list are files given as constants; each process loads them
//! once, and planning loads them too, so a missing file fails before any data is read.

use std::sync::Arc;

use datafusion::logical_expr::ScalarUDF;
use tokq_core::web::{suffix, url, url_filter};

use crate::kit::{doc, str_fn, NEEDS_FILE};

const PSL: &str = "A constant path or s3:// URI of a Public Suffix List file: publicsuffix.org's public_suffix_list.dat, \
                   or the .tld_set_snapshot file of the tldextract Python package (what datatrove uses). Only its \
                   ICANN section counts, as in tldextract's default.";

/// Every URL function.
pub fn functions() -> Vec<Arc<ScalarUDF>> {
    vec![
        str_fn::<String>(
            "url_filter",
            2..=2,
            |c| {
                let f = url_filter::cached(c.str(1, "options")?.unwrap_or_default())?;
                Ok(Box::new(move |u| f.check(u).map(str::to_string)))
            },
            doc(
                "Why datatrove's URLFilter drops a URL, or NULL to keep it, deciding as datatrove 0.10.1 does with \
                 the same reasons: 'domain' (its registered domain is blocked), 'subdomain' (its whole host is), \
                 'url' (the URL itself is), 'hard_blacklisted' (a banned word is one of its words), \
                 'soft_blacklisted' (at least soft_word_threshold soft banned words are), 'blacklisted_subword' \
                 (a banned subword occurs in it with everything but ASCII letters and digits removed). NULL gives NULL.",
                "url_filter(url, 'lists=DIR, psl=FILE [, soft_word_threshold=2, extra_domains=a.com|b.org, ...]')",
            )
            .with_argument("url", "The URL, as WARC-Target-URI gives it.")
            .with_argument(
                "options",
                "A constant 'key=value' list. lists=DIR: datatrove's assets folder (python -c \"import datatrove.utils._import_utils \
                 as u; print(u.ASSETS_PATH)\"), read as it is: url_filterblacklistsv0_3_0.tar.gz and the three word lists; \
                 without it only the extra entries count (datatrove's use_integrated_lists=False). psl=FILE: a Public Suffix \
                 List, needed for blocked domains. soft_word_threshold (2). extra_domains, extra_urls, banned_words, \
                 banned_subwords, soft_banned_words: more entries, separated by |.",
            )
            .with_sql_example(format!(
                "```sql\n{NEEDS_FILE}datatrove's assets folder and a public suffix list\nSELECT url, url_filter(url, 'lists=datatrove/assets, psl=public_suffix_list.dat') AS reason FROM read_warc('crawl/*.warc.gz');\n```"
            ))
            .with_related_udf("url_domain")
            .build(),
        ),
        str_fn::<String>(
            "url_host",
            1..=1,
            |_| Ok(Box::new(|u| Some(url::host(u).to_ascii_lowercase()).filter(|h| !h.is_empty()))),
            doc(
                "The host of a URL, lowercased: no scheme, user, port, path, query or fragment, no trailing dot; an IPv6 \
                 host keeps its brackets. Found leniently, as tldextract does, so malformed crawl URLs still give a host. \
                 NULL when there is none; NULL gives NULL.",
                "url_host(url)",
            )
            .with_argument("url", "The URL.")
            .with_sql_example("```sql\nSELECT url_host('https://User@News.Example.co.uk:8080/a?b#c');\n```")
            .with_related_udf("url_domain")
            .build(),
        ),
        str_fn::<String>(
            "url_domain",
            2..=2,
            |c| {
                let s = suffix::cached(c.str(1, "psl")?.unwrap_or_default())?;
                Ok(Box::new(move |u| Some(s.split(u).registered_domain().to_lowercase()).filter(|d| !d.is_empty())))
            },
            doc(
                "The registered domain of a URL (the label before its public suffix, and the suffix: 'bbc.co.uk' for \
                 news.bbc.co.uk), lowercased, as tldextract's registered_domain splits it. NULL for hosts without one \
                 (IP addresses, localhost, a bare suffix); NULL gives NULL. The suffix list is a file, so decisions stay \
                 the same until you change it.",
                "url_domain(url, psl)",
            )
            .with_argument("url", "The URL.")
            .with_argument("psl", PSL)
            .with_sql_example(format!(
                "```sql\n{NEEDS_FILE}a public suffix list\nSELECT url_domain(url, 'public_suffix_list.dat') AS domain, count(*) FROM read_warc('crawl/') GROUP BY 1;\n```"
            ))
            .with_related_udf("url_host")
            .build(),
        ),
    ]
}

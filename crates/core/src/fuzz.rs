//! No text function panics on arbitrary Unicode: random strings drawn from the characters that
//! stress the rules (line breaks of every kind, NUL and controls, lone combining marks, bullets,
//! ellipses, quotes, digits, CJK, emoji), plus fully arbitrary strings.

use proptest::prelude::*;

use xxhash_rust::xxh64::xxh64;

use crate::dedup::decont::Decont;
use crate::dedup::minhash::{bands, jaccard, MinHasher, BANDS, NGRAM, ROWS};
use crate::dedup::spans::SpanDedup;
use crate::quality::c4::C4Quality;
use crate::quality::chain::{Chain, FINEWEB};
use crate::quality::fineweb::FineWebQuality;
use crate::quality::gopher::GopherQuality;
use crate::quality::params::truthy;
use crate::quality::repetition::{self, GopherRepetition};
use crate::quality::{Doc, Filter, Verdict};
use crate::text::clean::{clean_text, mask_pii, normalize_text, simplify_text, Form};
use crate::text::language::detect_language;
use crate::text::sentences::{count_sentences, split_sentences};
use crate::text::words::{split_words, words_of_tokens};

fn tricky() -> impl Strategy<Value = String> {
    let pieces = prop::sample::select(vec![
        "", " ", "  ", "\n", "\n\n", "\r\n", "\r", "\u{2028}", "\u{85}", "\x0b", "\x00", "\x1f", "\t", "\u{301}", "\u{a0}",
        "the", "and", "of", "Don't", "U.S.", "e.g.", "...", "…", "#", "•", "- ", "!", "?", ".", "\"", "'", "{", "[1]",
        "[edit]", "lorem ipsum", "javascript", "cookie policy", "3.14", "1,000", "٣", "漢字", "。", "🙂", "a@b.co", "8.8.8.8",
        "http://x.com/a?b=1", ":)", "(", ")", "n't", "ß", "İ", "Σ",
    ]);
    prop::collection::vec(pieces, 0..60).prop_map(|v| v.concat())
}

fn exercise(text: &str) {
    assert_eq!(split_words(text), words_of_tokens(text));
    let _ = count_sentences(text);
    let _ = split_sentences(text);
    let filters: Vec<Box<dyn Filter>> = vec![
        Box::new(GopherQuality::default()),
        Box::new(GopherRepetition::default()),
        Box::new(FineWebQuality::default()),
        Box::new(C4Quality::default()),
        Box::new(C4Quality::with_params("split_paragraph=false,filter_no_terminal_punct=false").unwrap_or_default()),
        Box::new(GopherQuality::with_params("min_doc_words=none,min_avg_word_length=none").unwrap_or_default()),
    ];
    for f in &filters {
        let doc = Doc::new(text);
        let _ = f.check(&doc);
        assert_eq!(f.signals(&doc).len(), f.signal_names().len());
    }
    // Deciding counts sentences only up to the minimum; counting them all must agree.
    for c4 in [C4Quality::default(), C4Quality { filter_no_terminal_punct: false, min_num_sentences: 2, ..Default::default() }] {
        let full = c4.run(text);
        assert_eq!(c4.check(&Doc::new(text)).reason(), full.reason);
        assert_eq!(c4.kept_text(text), full.text);
    }
    // C4 hands on the kept text's words, derived from the document's: they must be that text's words.
    let lenient = C4Quality { filter_no_terminal_punct: false, min_num_sentences: 0, min_words_per_line: 0, ..Default::default() };
    for c4 in [lenient, C4Quality { min_num_sentences: 0, ..Default::default() }] {
        let doc = Doc::new(text);
        doc.words();
        if let Verdict::Rewrite { text: kept, words: Some(words) } = c4.check(&doc) {
            assert_eq!(words.into_iter().map(|r| &kept[r]).collect::<Vec<_>>(), split_words(&kept));
        }
    }
    // Deciding skips n-gram counts that provably pass; the full signals must decide the same.
    let strict = "top_2_gram=0.05,top_3_gram=0.04,top_4_gram=0.03,duplicated_5_n_grams=0.02,duplicated_10_n_grams=none";
    for rep in [GopherRepetition::default(), GopherRepetition::with_params(strict).unwrap_or_default()] {
        if !text.is_empty() {
            assert_eq!(rep.check(&Doc::new(text)).reason(), decide_from_signals(&rep, &rep.compute_signals(&Doc::new(text))), "{rep:?}");
        }
    }
    if let Ok(chain) = Chain::parse(FINEWEB) {
        let _ = chain.run(text);
    }
    for form in [Form::Nfc, Form::Nfkc, Form::Nfd, Form::Nfkd] {
        let _ = normalize_text(text, form);
    }
    let cleaned = clean_text(text);
    assert_eq!(clean_text(&cleaned), cleaned, "clean_text is idempotent");
    let _ = mask_pii(text);
    let simple = simplify_text(text);
    let _ = detect_language(text);
    // Shingles hashed in place equal the joined n-grams' hashes; signatures and bands are whole.
    let h = MinHasher::default();
    let words = split_words(&simple);
    assert_eq!(words, words_of_tokens(&simple));
    let joined: Vec<u64> = words.windows(NGRAM).map(|g| xxh64(g.join(" ").as_bytes(), 0)).collect();
    assert_eq!(h.shingles(text), joined);
    if let Some(sig) = h.signature(text) {
        assert_eq!(bands(&sig, BANDS, ROWS).map(|b| b.len()).ok(), Some(BANDS));
        assert_eq!(jaccard(text, text, NGRAM), Some(1.0));
    }
    // Spans: the starts a text's hashes name can be dropped, and what is left is pieces of the
    // text (lines joined by one byte); a text's first n-gram is found by its own hash.
    for unit in ["sentence", "line", "ngram", "token:tiktoken:cl100k_base"] {
        for n in [1, 3] {
            let Ok(d) = SpanDedup::new("fuzz", n, unit) else { continue };
            let starts: Vec<u32> = d.hashes(text).into_iter().map(|(_, s)| s).collect();
            assert!(d.remove(text, &starts).len() <= text.len(), "{unit:?} {n}");
            let _ = d.remove(text, &[u32::MAX, 0, 0]);
        }
    }
    if let Ok(d) = Decont::new("fuzz", 3, true, true) {
        let hashes = d.eval_hashes(text, Some(text));
        if let Some(&first) = MinHasher::new(1, 3, 1).map(|m| m.shingles(text)).ok().and_then(|s| s.first().copied()).as_ref() {
            assert_eq!(d.first_match(text, &hashes).map(|(_, h)| h), Some(first));
        }
    }
}

fn decide_from_signals(r: &GopherRepetition, s: &repetition::Signals) -> Option<&'static str> {
    let lines = [
        ("dup_para_frac", s.dup_para_frac, r.dup_para_frac),
        ("dup_para_char_frac", s.dup_para_char_frac, r.dup_para_char_frac),
        ("dup_line_frac", s.dup_line_frac, r.dup_line_frac),
        ("dup_line_char_frac", s.dup_line_char_frac, r.dup_line_char_frac),
    ];
    let top = s.top_n_grams.iter().zip(&r.top_n_grams).map(|(&(n, v), &(_, t))| (repetition::top_reason(n), v, t));
    let dup = s.dup_n_grams.iter().zip(&r.dup_n_grams).map(|(&(n, v), &(_, t))| (repetition::dup_reason(n), v, t));
    lines.into_iter().chain(top).chain(dup).find(|&(_, v, t)| truthy(t).is_some_and(|t| v > t)).map(|(name, _, _)| name)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]

    #[test]
    fn text_functions_never_panic_on_tricky_text(text in tricky()) {
        exercise(&text);
    }

    #[test]
    fn text_functions_never_panic_on_any_unicode(text in "\\PC{0,200}|(?s).{0,200}") {
        exercise(&text);
    }
}

/// Pieces of WARC headers, HTTP messages and URLs, for the web parsers.
fn web_bytes() -> impl Strategy<Value = Vec<u8>> {
    let pieces = prop::sample::select(vec![
        &b"WARC/1.0\r\n"[..], b"HTTP/1.1 200 OK\r\n", b"GET / HTTP/1.1\r\n", b"Content-Length: 5\r\n", b"Content-Length: 99999999999\r\n",
        b"Transfer-Encoding: chunked\r\n", b"Content-Encoding: gzip\r\n", b"Content-Encoding: deflate\r\n", b"Content-Encoding: br\r\n",
        b"\r\n", b"\n", b" folded\r\n", b"5\r\nhello\r\n", b"0\r\n\r\n", b"fffffffff\r\n", b"\x1f\x8b\x08\x00", b"\x78\x9c", b"\x0b\x02",
        b"\x00", b"\xff\xfe", b":", b"<p>", b"https://a.b/", b"[::1]", b"@", b"xn--", b"%20", b" ",
    ]);
    prop::collection::vec(prop_oneof![pieces.prop_map(<[u8]>::to_vec), prop::collection::vec(any::<u8>(), 0..20)], 0..40)
        .prop_map(|v| v.concat())
}

fn exercise_web(bytes: &[u8]) {
    use crate::web::{http::Message, suffix::Suffixes, url, warc::Header};
    if let Ok(h) = Header::parse(bytes) {
        let _ = (h.content_length(), h.target_uri(), h.record_type());
    }
    if let Some(m) = Message::parse(bytes) {
        assert!(m.payload().len() as u64 <= crate::web::http::MAX_DECODED.max(bytes.len() as u64));
    }
    let text = String::from_utf8_lossy(bytes);
    let _ = url::host(&text);
    let suffixes = Suffixes::parse("com\nco.uk\n*.ck\n!www.ck\n").expect("a valid list");
    let parts = suffixes.split(&text);
    let _ = (parts.registered_domain(), parts.fqdn());
    let _ = Suffixes::parse(&text);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(600))]

    #[test]
    fn web_parsers_never_panic_on_crafted_bytes(bytes in web_bytes()) {
        exercise_web(&bytes);
    }

    #[test]
    fn web_parsers_never_panic_on_any_bytes(bytes in prop::collection::vec(any::<u8>(), 0..300)) {
        exercise_web(&bytes);
    }
}

/// Pieces of HTML pages: tags that drop, mark and split text, broken markup, charset
/// declarations and bytes of other encodings.
fn html_bytes() -> impl Strategy<Value = Vec<u8>> {
    let pieces = prop::sample::select(vec![
        &b"<html>"[..], b"<head>", b"<body>", b"<div class=\"footer\">", b"<div class='entry-content'>", b"<article>", b"<main>",
        b"<nav>", b"<p>", b"</p>", b"</div>", b"</", b"<table><tr><td>", b"<th>", b"</table>", b"<br>", b"<pre>", b"<a href=x>",
        b"</a>", b"<h2>", b"<li>", b"<script>", b"</script>", b"<style>", b"<!--", b"-->", b"<template>", b"<svg><foreignObject>",
        b"<math><mi>", b"<select><option>", b"<frameset>", b"<plaintext>", b"<meta charset=shift_jis>", b"<meta charset=utf-16>",
        b"<meta http-equiv=content-type content='text/html; charset=gb18030'>", b"&amp;", b"&#0;", b"&#x110000;", b"\xe9",
        b"\x82\xb1", b"\xef\xbb\xbf", b"\xff\xfe", b"\x00", b" ", b"\n", b"The river rose three metres overnight. ", "©".as_bytes(),
        b"hidden", b" style=display:none", b" aria-hidden=true", b">", b"<svg>", b"</svg>", b"<g d='x'>", b"</g>", b"<title>",
        b"</title>", b"</option>", b"<div role=menubar>", " © Getty".as_bytes(), b"Foto: dpa", b"(REUTERS/x)", b":", b"(",
        "Crédito:".as_bytes(), b"<form><input type=email>",
    ]);
    prop::collection::vec(prop_oneof![pieces.prop_map(<[u8]>::to_vec), prop::collection::vec(any::<u8>(), 0..12)], 0..80)
        .prop_map(|v| v.concat())
}

fn exercise_html(bytes: &[u8]) {
    use crate::web::html::{html_to_text, Options};
    for options in ["", "tables=false", "mode=page"] {
        let options = Options::parse(options).expect("valid options");
        for content_type in [None, Some("text/html; charset=windows-1252"), Some("text/html; charset=utf-8")] {
            let text = html_to_text(bytes, content_type, &options);
            assert_eq!(text.trim_end(), text, "no trailing whitespace");
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]

    #[test]
    fn html_to_text_never_panics_on_crafted_pages(bytes in html_bytes()) {
        exercise_html(&bytes);
    }

    #[test]
    fn html_to_text_never_panics_on_any_bytes(bytes in prop::collection::vec(any::<u8>(), 0..400)) {
        exercise_html(&bytes);
    }
}

/// A Bloom filter file is read back from a path a recipe names: any bytes there (another file, a
/// damaged one) must give an error, never a panic, and a filter that parses must answer.
fn bloom_bytes() -> impl Strategy<Value = Vec<u8>> {
    let header = (2u8..=8, 0u8..=9, 0u8..=255, 0u64..4).prop_map(|(width, hashes, cap, blocks)| {
        let mut b = b"TQBLOOM1".to_vec();
        b.extend_from_slice(&[width, hashes, cap, 0, 0, 0, 0, 0]);
        b.extend_from_slice(&blocks.to_le_bytes());
        b
    });
    (header, prop::collection::vec(any::<u8>(), 0..200)).prop_map(|(mut h, body)| {
        h.extend(body);
        h
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(600))]

    #[test]
    fn bloom_filters_never_panic_on_any_bytes(bytes in prop_oneof![bloom_bytes(), prop::collection::vec(any::<u8>(), 0..100)]) {
        use crate::dedup::bloom::CountingBloom;
        if let Ok(mut f) = CountingBloom::from_bytes(&bytes) {
            let g = f.clone();
            prop_assert!(f.count_all(&[7, 8]).iter().all(|&c| c <= 255));
            prop_assert!(f.merge(&g).is_ok());
        }
    }
}

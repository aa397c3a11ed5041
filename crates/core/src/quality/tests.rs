//! Rule boundaries: each rule keeps a document whose signal sits exactly on its threshold and drops
//! it just past it (datatrove's comparisons are strict), with the reason datatrove gives.

use super::c4::C4Quality;
use super::chain::{Chain, FINEWEB};
use super::fineweb::FineWebQuality;
use super::gopher::GopherQuality;
use super::repetition::GopherRepetition;
use super::{Doc, Filter, Verdict};

const EPS: f64 = 1e-9;

fn verdict(f: &dyn Filter, text: &str) -> Option<&'static str> {
    f.check(&Doc::new(text)).reason()
}

/// `n` words that pass every Gopher rule: "the", "and", then distinct words from `from` on.
fn prose_from(from: usize, n: usize) -> String {
    let word = |i: usize| format!("zq{}{}{}", (b'a' + (i % 26) as u8) as char, (b'a' + (i / 26 % 26) as u8) as char, (b'a' + (i / 676 % 26) as u8) as char);
    (0..n).map(|i| match i { 0 => "the".to_string(), 1 => "and".to_string(), _ => word(from + i) }).collect::<Vec<_>>().join(" ")
}

fn prose(n: usize) -> String {
    prose_from(0, n)
}

fn gopher(params: &str) -> GopherQuality {
    GopherQuality::with_params(params).unwrap()
}

#[test]
fn gopher_quality_defaults_on_their_boundaries() {
    let g = GopherQuality::default();
    assert_eq!(verdict(&g, &prose(50)), None);
    assert_eq!(verdict(&g, &prose(49)), Some("gopher_short_doc"));
    assert_eq!(verdict(&g, &prose(100_000)), None);
    assert_eq!(verdict(&g, &prose(100_001)), Some("gopher_long_doc"));
    // Mean word length: "the and" + 48 words of 3 letters is exactly 3; one of 2 letters is below.
    let mean3 = format!("the and {}", vec!["abc"; 48].join(" "));
    assert_eq!(verdict(&g, &mean3), None);
    assert_eq!(verdict(&g, &mean3.replacen("abc", "ab", 1)), Some("gopher_below_avg_threshold"));
    // 6 + 46*10 + 2*17 = 500 characters over 50 words: exactly 10.
    let mean10 = format!("the and {} {}", vec!["abcdefghij"; 46].join(" "), vec!["abcdefghijklmnopq"; 2].join(" "));
    assert_eq!(verdict(&g, &mean10), None);
    assert_eq!(verdict(&g, &format!("{mean10}r")), Some("gopher_above_avg_threshold"));
    // '#' tokens count as words in the denominator: 6 of 60 is 0.1, 7 of 61 is more.
    assert_eq!(verdict(&g, &format!("{} {}", prose(54), vec!["#"; 6].join(" "))), None);
    assert_eq!(verdict(&g, &format!("{} {}", prose(54), vec!["#"; 7].join(" "))), Some("gopher_too_many_hashes"));
    assert_eq!(verdict(&g, &format!("{} {}", vec!["…"; 6].join(" "), prose(54))), None);
    assert_eq!(verdict(&g, &format!("{} {}", vec!["…"; 7].join(" "), prose(54))), Some("gopher_too_many_ellipsis"));
    // 9 of 10 lines bulleted is 0.9; 19 of 20 is more.
    let bullets = |b: usize, n: usize| (0..n).map(|i| format!("{}{}", if i < b { "- " } else { "" }, prose_from(10 * i, 6))).collect::<Vec<_>>().join("\n");
    assert_eq!(verdict(&g, &bullets(9, 10)), None);
    assert_eq!(verdict(&g, &bullets(19, 20)), Some("gopher_too_many_bullets"));
    let ellipsis = |e: usize| (0..10).map(|i| format!("{}{}", prose_from(10 * i, 6), if i < e { "..." } else { "." })).collect::<Vec<_>>().join("\n");
    assert_eq!(verdict(&g, &ellipsis(3)), None);
    assert_eq!(verdict(&g, &ellipsis(4)), Some("gopher_too_many_end_ellipsis"));
    // 48 alphabetic words of 60 is 0.8; of 61 it is less.
    assert_eq!(verdict(&g, &format!("{} {}", prose(48), vec!["123"; 12].join(" "))), None);
    assert_eq!(verdict(&g, &format!("{} {}", prose(48), vec!["123"; 13].join(" "))), Some("gopher_below_alpha_threshold"));
    // Two distinct stop words, case-sensitive.
    let filler = vec!["cat"; 50].join(" ");
    assert_eq!(verdict(&g, &format!("{filler} the with")), None);
    assert_eq!(verdict(&g, &format!("{filler} the the The With")), Some("gopher_enough_stop_words"));
}

#[test]
fn gopher_quality_parameters_override_and_disable() {
    let short = prose(20);
    assert_eq!(verdict(&gopher(""), &short), Some("gopher_short_doc"));
    assert_eq!(verdict(&gopher("min_doc_words=20"), &short), None);
    assert_eq!(verdict(&gopher("min_doc_words=21"), &short), Some("gopher_short_doc"));
    assert_eq!(verdict(&gopher("min_doc_words=none"), &short), None);
    assert_eq!(verdict(&gopher("min_doc_words=0"), &short), None);
    assert_eq!(verdict(&gopher("stop_words=the|and"), &prose(60)), None);
    assert_eq!(verdict(&gopher("stop_words=the|zebra|lion,min_stop_words=2"), &prose(60)), Some("gopher_enough_stop_words"));
    // Every rule disabled: even an empty text passes, where datatrove would divide by zero.
    let off = "min_doc_words=none,max_doc_words=none,min_avg_word_length=none,max_avg_word_length=none,max_symbol_word_ratio=none,max_bullet_lines_ratio=none,max_ellipsis_lines_ratio=none,max_non_alpha_words_ratio=none,min_stop_words=none";
    assert_eq!(verdict(&gopher(off), ""), None);
    let e = GopherQuality::with_params("min_words=3").unwrap_err().to_string();
    assert!(e.contains("unknown parameter 'min_words'") && e.contains("min_doc_words"), "{e}");
    let e = GopherQuality::with_params("min_doc_words=many").unwrap_err().to_string();
    assert!(e.contains("min_doc_words must be a number or none, got 'many'"), "{e}");
}

/// For a `>` rule: keep at threshold = value, drop at value - eps (and the reverse for `<`).
fn assert_boundary(make: impl Fn(&str) -> Box<dyn Filter>, text: &str, key: &str, value: f64, reason: &str, min_rule: bool) {
    let (keep_at, drop_at) = if min_rule { (value, value + EPS) } else { (value, value - EPS) };
    assert_eq!(verdict(make(&format!("{key}={keep_at}")).as_ref(), text), None, "{key}={keep_at} should keep");
    assert_eq!(verdict(make(&format!("{key}={drop_at}")).as_ref(), text), Some(reason), "{key}={drop_at} should drop");
}

#[test]
fn gopher_repetition_rules_on_their_boundaries() {
    let para = "a b c d e f g h i j k l m n o p q r s t";
    let text = format!("{para}\n\nunique one two\n\n{para}\n\nthe end of it all");
    // Generous defaults elsewhere so that only the rule under test can fire.
    let loose = "dup_para_frac=1,dup_para_char_frac=1,dup_line_frac=1,dup_line_char_frac=1,top_2_gram=1,top_3_gram=1,top_4_gram=1,duplicated_5_n_grams=1,duplicated_6_n_grams=1,duplicated_7_n_grams=1,duplicated_8_n_grams=1,duplicated_9_n_grams=1,duplicated_10_n_grams=1";
    let make = |p: &str| -> Box<dyn Filter> { Box::new(GopherRepetition::with_params(&format!("{loose},{p}")).unwrap()) };
    let s = GopherRepetition::default().compute_signals(&Doc::new(&text));
    let len = text.chars().count() as f64;
    assert_eq!(s.dup_para_frac, 0.25);
    assert_eq!(s.dup_para_char_frac, para.len() as f64 / len);
    assert_eq!(s.dup_line_frac, 0.25);
    let checks: Vec<(&str, f64)> = vec![
        ("dup_para_frac", s.dup_para_frac),
        ("dup_para_char_frac", s.dup_para_char_frac),
        ("dup_line_frac", s.dup_line_frac),
        ("dup_line_char_frac", s.dup_line_char_frac),
        ("top_2_gram", s.top_n_grams[0].1),
        ("duplicated_5_n_grams", s.dup_n_grams[0].1),
        ("duplicated_10_n_grams", s.dup_n_grams[5].1),
    ];
    for (key, value) in checks {
        assert_boundary(make, &text, key, value, key, false);
    }
}

#[test]
fn gopher_repetition_matches_datatrove_on_hand_computed_cases() {
    let r = GopherRepetition::default();
    assert_eq!(verdict(&r, ""), Some("empty"));
    // re.split("\n+", "\nx\n") == ["", "x", ""]: the empty pieces are duplicates of each other.
    let s = r.compute_signals(&Doc::new("\nx\n"));
    assert_eq!(s.dup_line_frac, 1.0 / 3.0);
    // Top 2-gram "a b" occurs 3 times in "a b a b a b c": 3 chars * 3 / 13 chars.
    let s = r.compute_signals(&Doc::new("a b a b a b c"));
    assert_eq!(s.top_n_grams[0], (2, 9.0 / 13.0));
    // Ties go to the first n-gram seen: "xx y" (4 chars) before "z w", both twice.
    let s = r.compute_signals(&Doc::new("xx y z w xx y z w"));
    assert_eq!(s.top_n_grams[0], (2, 8.0 / 17.0));
    // Duplicated 5-grams are joined by "": ["ab","c","d","e","f"] repeats ["a","bc","d","e","f"].
    let s = r.compute_signals(&Doc::new("ab c d e f a bc d e f"));
    assert_eq!(s.dup_n_grams[0], (5, 6.0 / 21.0));
    // After a repeat the scan skips n words: 10 repeated chars, not 11.
    let s = r.compute_signals(&Doc::new("a b c d e a b c d e a b c d e"));
    assert_eq!(s.dup_n_grams[0], (5, 10.0 / 29.0));
    // Sizes past datatrove's defaults keep its reason strings.
    let twelve = "one two three four five six seven eight nine ten eleven twelve";
    let text = format!("{twelve} {twelve} {}", prose(60));
    let big = |p: &str| GopherRepetition::with_params(&format!("{p},top_2_gram=none,top_3_gram=none,top_4_gram=none,duplicated_5_n_grams=none,duplicated_6_n_grams=none,duplicated_7_n_grams=none,duplicated_8_n_grams=none,duplicated_9_n_grams=none,duplicated_10_n_grams=none")).unwrap();
    assert_eq!(verdict(&big("duplicated_12_n_grams=0.01"), &text), Some("duplicated_12_n_grams"));
    assert_eq!(verdict(&big("top_11_gram=0.01"), &text), Some("top_11_gram"));
}

#[test]
fn fineweb_rules_on_their_boundaries() {
    let f = FineWebQuality::default();
    assert_eq!(verdict(&f, "\n \n"), Some("empty"));
    let line = |i: usize, end: &str| format!("line number {i} has enough words to be long{end}");
    // 3 of 25 lines end in punctuation (0.12): kept; 2 of 25: dropped.
    let doc = |ended: usize| (0..25).map(|i| line(i, if i < ended { "." } else { "" })).collect::<Vec<_>>().join("\n");
    assert_eq!(verdict(&f, &doc(3)), None);
    assert_eq!(verdict(&f, &doc(2)), Some("line_punct_ratio"));
    assert_eq!(verdict(&FineWebQuality::with_params("line_punct_exclude_zero=true").unwrap(), &doc(0)), None);
    let text = format!("{}\nshort.\nshort.\n{}", doc(25), "x.");
    let make = |p: &str| -> Box<dyn Filter> { Box::new(FineWebQuality::with_params(p).unwrap()) };
    let s = f.signals(&Doc::new(&text));
    assert_eq!(s[0], 28.0);
    assert_eq!(s[2], 3.0 / 28.0);
    assert_boundary(make, &text, "short_line_thr", s[2], "short_line_ratio", false);
    assert_boundary(make, &text, "char_duplicates_ratio", s[3], "char_dup_ratio", false);
    let listy = format!("{text}\n\n\n\n");
    assert_boundary(make, &listy, "new_line_ratio", f.signals(&Doc::new(&listy))[4], "list_ratio", false);
}

#[test]
fn c4_drops_lines_and_documents_as_datatrove() {
    let c4 = C4Quality::default();
    let sentence = "This line is a sentence.";
    let five = vec![sentence; 5].join("\n");
    assert_eq!(c4.run(&five).text.as_deref(), Some(five.as_str()));
    assert_eq!(verdict(&c4, &vec![sentence; 4].join("\n")), Some("too_few_sentences"));
    // Lines without terminal punctuation, with an ellipsis, too few words, javascript or policy
    // words are dropped; citations are removed before the punctuation test.
    let text = format!("{five}\nno stop here\nends with an ellipsis...\ntwo words.\nEnable javascript please.\nRead our privacy policy now.\nCited fact here.[1]");
    let o = c4.run(&text);
    assert_eq!(o.text, Some(format!("{five}\nCited fact here.")));
    assert_eq!((o.n_lines, o.n_kept_lines, o.n_sentences), (11, 6, 6));
    assert_eq!(verdict(&c4, &format!("{five}\nLorem ipsum dolor sit amet.")), Some("lorem_ipsum"));
    assert_eq!(verdict(&c4, &format!("{five}\nA {{ curly }} line.")), Some("curly_bracket"));
    // FineWeb's setting keeps lines without terminal punctuation.
    let fw = C4Quality::with_params("filter_no_terminal_punct=false").unwrap();
    assert_eq!(fw.run(&format!("{five}\nno stop here")).n_kept_lines, 6);
    // A word over 1000 characters drops its line; min_num_sentences=-1 disables the count.
    let long = format!("{five}\nword {}.", "x".repeat(1001));
    assert_eq!(c4.run(&long).n_kept_lines, 5);
    assert_eq!(verdict(&C4Quality::with_params("min_num_sentences=-1").unwrap(), "nothing"), None);
    // On its boundary: 5 sentences kept, with min_num_sentences 5 and 6.
    assert_eq!(verdict(&C4Quality::with_params("min_num_sentences=6").unwrap(), &five), Some("too_few_sentences"));
}

#[test]
fn chain_reports_the_first_failing_filter_and_the_kept_text() {
    let chain = Chain::parse(FINEWEB).unwrap();
    let o = chain.run("");
    assert_eq!(o.filter_reason().as_deref(), Some("gopher_repetition:empty"));
    let o = chain.run(&prose(60).replace("the and", "xx yy"));
    assert_eq!(o.filter_reason().as_deref(), Some("gopher_quality:gopher_enough_stop_words"));
    // Stop words on the first line only, so that no n-gram repeats across lines.
    let line = |i: usize| if i == 0 { prose_from(0, 8) } else { prose_from(10 * i, 10)[8..].to_string() };
    let good = (0..12).map(|i| format!("{}.", line(i))).collect::<Vec<_>>().join("\n");
    let o = chain.run(&format!("  {good}\n\n"));
    assert_eq!(o, super::chain::Outcome { dropped: None, text: Some(good.clone()) });
    let e = Chain::parse("gopher_quality; fancy_filter").unwrap_err().to_string();
    assert!(e.contains("unknown filter 'fancy_filter'"), "{e}");
    let e = Chain::parse("finweb").map(|_| ()).unwrap_err().to_string();
    assert!(e.contains("did you mean 'fineweb'?") && e.contains("presets: fineweb"), "{e}");
    let e = Chain::parse("c4_quality(min_num_sentences=3").unwrap_err().to_string();
    assert!(e.contains("must end with ')'"), "{e}");
    assert!(matches!(C4Quality::default().check(&Doc::new(&good)), Verdict::Keep));
}

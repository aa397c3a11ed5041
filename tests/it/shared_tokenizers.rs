//! On real tokenizers and real text: tokq's own encoder gives the reference encoders' ids, and
//! the reference encoders' chunked encoding gives their whole-text ids.

use tokq_core::tokenize::{EncodeOptions, Tokenizer};

use crate::util::{shared, shared_texts};

fn specs() -> Vec<String> {
    let mut specs: Vec<String> = [
        "gpt2/tokenizer.json",
        "llama3/tokenizer.json",
        "qwen/tokenizer.json",
        "mistral/tokenizer.v1.json",
        "mistral/tokenizer.v3.json",
        "llama2-pii/tokenizer.json",
    ]
        .iter()
        .filter_map(|t| shared(&format!("tokenizers/{t}")))
        .map(|p| p.display().to_string())
        .collect();
    specs.push("tiktoken:cl100k_base".into());
    specs.push("tiktoken:o200k_base".into());
    if let Some(q) = shared("tokenizers/qwen/qwen.tiktoken") {
        specs.push(format!("tiktoken:{}#qwen", q.display()));
    }
    if let Some(r) = shared("tokenizers/openai-tiktoken/r50k_base.tiktoken") {
        specs.push(format!("tiktoken:{}#r50k", r.display()));
    }
    specs
}

#[test]
fn tokq_encoder_gives_the_reference_ids() {
    let (Some(wiki), Some(udhr)) = (shared_texts("corpora/wikipedia-en-2015/wiki_en_2015_sample.jsonl.gz", 300), shared_texts("corpora/udhr-multilingual/udhr2.jsonl", 400)) else {
        return;
    };
    for spec in specs() {
        let ours = Tokenizer::load(&spec).unwrap();
        let reference = Tokenizer::load(&format!("reference:{spec}")).unwrap();
        assert_eq!(ours.backend(), "tokq-bpe", "{spec}: {:?}", ours.fallback_reason);
        for text in wiki.iter().chain(udhr.iter()) {
            assert_eq!(ours.encode_whole(text).unwrap(), reference.encode_whole(text).unwrap(), "{spec}: {}", &text[..text.len().min(80)]);
        }
    }
}

#[test]
fn the_compiled_form_of_each_file_gives_the_ids_of_its_parse() {
    use tokq_core::tokenize::fast::{bpe::BpeModel, compiled, hf_json, FastBpe, Normalizer, Split, Unicode};
    use tokq_core::tokenize::{spec::SplitPattern, tiktoken::parse_rank_file, Encode};
    let (Some(wiki), Some(udhr)) = (shared_texts("corpora/wikipedia-en-2015/wiki_en_2015_sample.jsonl.gz", 100), shared_texts("corpora/udhr-multilingual/udhr2.jsonl", 400)) else {
        return;
    };
    for spec in specs().iter().filter(|s| !s.starts_with("tiktoken:") || s.contains('#')) {
        let parsed = match spec.strip_prefix("tiktoken:").and_then(|s| s.split_once('#')) {
            Some((file, pattern)) => {
                let pattern = SplitPattern::parse(pattern).unwrap();
                let model = BpeModel::from_ranks(parse_rank_file(&std::fs::read(file).unwrap()).unwrap()).unwrap();
                let nfc = if pattern.nfc() { Normalizer::Nfc } else { Normalizer::None };
                FastBpe::new(model, Split::Regex(pattern), Unicode::Tiktoken, nfc, Default::default())
            }
            None => hf_json::load(&std::fs::read(spec).unwrap()).unwrap(),
        };
        let bytes = compiled::encode(&parsed);
        let back = compiled::decode(&bytes).unwrap();
        for text in wiki.iter().chain(udhr.iter()) {
            assert_eq!(back.encode(text).unwrap(), parsed.encode(text).unwrap(), "{spec}: {}", &text[..text.len().min(80)]);
        }
        assert_eq!(compiled::encode(&back), bytes, "{spec}: compiles to other bytes the second time");
    }
}

#[test]
fn chunked_ids_equal_whole_text_ids() {
    let (Some(wiki), Some(udhr)) = (shared_texts("corpora/wikipedia-en-2015/wiki_en_2015_sample.jsonl.gz", 150), shared_texts("corpora/udhr-multilingual/udhr2.jsonl", 400)) else {
        return;
    };
    for spec in &specs() {
        let tok = Tokenizer::load(&format!("reference:{spec}")).unwrap();
        let mut cuts = 0;
        for text in wiki.iter().chain(udhr.iter()) {
            let mut chunked = vec![];
            tok.encode_into(text, &EncodeOptions::default(), 256, &mut chunked).unwrap();
            assert_eq!(chunked, tok.encode_whole(text).unwrap(), "{spec}: {}", &text[..text.len().min(80)]);
            cuts += text.len() / 256;
        }
        assert!(cuts > 1000, "{spec}: too few cut points exercised");
    }
}

#[test]
fn qwen_rank_file_matches_qwen_tokenizer_json() {
    let (Some(json), Some(ranks), Some(udhr)) =
        (shared("tokenizers/qwen/tokenizer.json"), shared("tokenizers/qwen/qwen.tiktoken"), shared_texts("corpora/udhr-multilingual/udhr2.jsonl", 400))
    else {
        return;
    };
    let hf = Tokenizer::load(json.to_str().unwrap()).unwrap();
    let tk = Tokenizer::load(&format!("tiktoken:{}#qwen", ranks.display())).unwrap();
    for text in &udhr {
        assert_eq!(hf.encode_whole(text).unwrap(), tk.encode_whole(text).unwrap());
    }
}

#[test]
fn a_sentencepiece_file_with_a_metaspace_pre_tokenizer_runs_on_the_fallback_and_says_why() {
    let Some(v3) = shared("tokenizers/mistral/tokenizer.v3.json") else { return };
    let mut json: serde_json::Value = serde_json::from_slice(&std::fs::read(v3).unwrap()).unwrap();
    json["normalizer"] = serde_json::Value::Null;
    json["pre_tokenizer"] = serde_json::json!({"type": "Metaspace", "replacement": "\u{2581}", "prepend_scheme": "always", "split": false});
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("tokenizer.json");
    std::fs::write(&path, json.to_string()).unwrap();
    let tok = Tokenizer::load(&path.display().to_string()).unwrap();
    assert_eq!(tok.backend(), "hf-tokenizers");
    assert!(tok.fallback_reason.as_deref().unwrap_or_default().contains("Metaspace"), "{:?}", tok.fallback_reason);
    assert!(!tok.encode_whole("Hello world").unwrap().is_empty());
}

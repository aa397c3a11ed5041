//! Neural classifiers in SQL: `model_logits`, `model_predict`, `model_embed` and
//! `queries/fineweb-edu.sql`, over a small BERT folder this file writes (random weights,
//! WordPiece over letters). Parity with transformers is `tests/parity/model_parity.py`'s.

use std::collections::BTreeMap;
use std::path::Path;

use crate::util::*;

/// A seeded uniform draw in [-1, 1).
struct Lcg(u64);

impl Lcg {
    fn next(&mut self) -> f32 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        ((self.0 >> 40) as f32 / (1u64 << 24) as f32) * 2.0 - 1.0
    }
}

const HIDDEN: usize = 16;
const LAYERS: usize = 2;
const INNER: usize = 32;
const POSITIONS: usize = 64;

/// The vocabulary: specials, letters, word pieces of letters, digits and punctuation.
fn vocab() -> Vec<String> {
    let mut v: Vec<String> = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
        .map(String::from)
        .to_vec();
    v.extend(('a'..='z').chain('0'..='9').map(|c| c.to_string()));
    v.extend(('a'..='z').chain('0'..='9').map(|c| format!("##{c}")));
    v.extend([".", ",", "!", "?", "'", "-", "(", ")", ":", ";", "\""].map(String::from));
    v
}

/// Writes a BERT sequence-classification folder with one regression logit (FineWeb-Edu's shape)
/// into `dir`: `config.json`, `tokenizer.json`, `tokenizer_config.json`, `model.safetensors`.
/// The classifier's bias puts the scores of the sample's kept pages on both sides of 2.5, so the default threshold of 3 splits them.
pub fn tiny_bert(dir: &Path) {
    std::fs::create_dir_all(dir).unwrap();
    let vocab = vocab();
    let config = serde_json::json!({
        "architectures": ["BertForSequenceClassification"], "model_type": "bert", "vocab_size": vocab.len(),
        "hidden_size": HIDDEN, "num_hidden_layers": LAYERS, "num_attention_heads": 2, "intermediate_size": INNER,
        "hidden_act": "gelu", "max_position_embeddings": POSITIONS, "type_vocab_size": 2, "layer_norm_eps": 1e-12,
        "pad_token_id": 0, "id2label": {"0": "LABEL_0"}, "label2id": {"LABEL_0": 0}, "problem_type": "regression"
    });
    std::fs::write(dir.join("config.json"), config.to_string()).unwrap();
    let ids: serde_json::Map<String, serde_json::Value> = vocab
        .iter()
        .enumerate()
        .map(|(i, t)| (t.clone(), i.into()))
        .collect();
    let special = |id: usize, t: &str| serde_json::json!({"id": id, "content": t, "single_word": false, "lstrip": false, "rstrip": false, "normalized": false, "special": true});
    let tokenizer = serde_json::json!({
        "version": "1.0", "truncation": null, "padding": null,
        "added_tokens": (0..5).map(|i| special(i, &vocab[i])).collect::<Vec<_>>(),
        "normalizer": {"type": "BertNormalizer", "clean_text": true, "handle_chinese_chars": true, "strip_accents": null, "lowercase": true},
        "pre_tokenizer": {"type": "BertPreTokenizer"},
        "post_processor": {"type": "TemplateProcessing",
            "single": [{"SpecialToken": {"id": "[CLS]", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}}, {"SpecialToken": {"id": "[SEP]", "type_id": 0}}],
            "pair": [{"SpecialToken": {"id": "[CLS]", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}}, {"SpecialToken": {"id": "[SEP]", "type_id": 0}},
                     {"Sequence": {"id": "B", "type_id": 1}}, {"SpecialToken": {"id": "[SEP]", "type_id": 1}}],
            "special_tokens": {"[CLS]": {"id": "[CLS]", "ids": [2], "tokens": ["[CLS]"]}, "[SEP]": {"id": "[SEP]", "ids": [3], "tokens": ["[SEP]"]}}},
        "decoder": null,
        "model": {"type": "WordPiece", "unk_token": "[UNK]", "continuing_subword_prefix": "##", "max_input_chars_per_word": 100, "vocab": ids}
    });
    std::fs::write(dir.join("tokenizer.json"), tokenizer.to_string()).unwrap();
    std::fs::write(
        dir.join("tokenizer_config.json"),
        r#"{"model_max_length": 64, "tokenizer_class": "BertTokenizer"}"#,
    )
    .unwrap();
    std::fs::write(
        dir.join("model.safetensors"),
        safetensors(&tensors(vocab.len())),
    )
    .unwrap();
}

/// Writes a Model2Vec folder over [`tiny_bert`]'s WordPiece tokenizer into `dir`: 8-dimensional
/// normalized vectors, and with `head`, model2vec 0.10's saved classifier (a softmax over three
/// classes).
pub fn tiny_static(dir: &Path, head: bool) {
    tiny_bert(dir);
    let mut rng = Lcg(11);
    let mut draw = |n: usize| (0..n).map(|_| rng.next()).collect::<Vec<f32>>();
    let tokens = vocab().len();
    std::fs::write(
        dir.join("model.safetensors"),
        safetensors(&[("embeddings".into(), vec![tokens, 8], draw(tokens * 8))]),
    )
    .unwrap();
    let mut config = serde_json::json!({"model_type": "model2vec", "architectures": ["StaticModel"], "hidden_dim": 8, "normalize": true});
    if head {
        config["head_config"] = serde_json::json!({"n_layers": 1, "activation": "softmax", "classes": ["low", "mid", "high"]});
        std::fs::write(
            dir.join("head.safetensors"),
            safetensors(&[
                ("head.0.weight".into(), vec![3, 8], draw(24)),
                ("head.0.bias".into(), vec![3], draw(3)),
            ]),
        )
        .unwrap();
    }
    std::fs::write(dir.join("config.json"), config.to_string()).unwrap();
}

/// Every tensor of the model, by name, with its shape and values.
fn tensors(vocab: usize) -> Vec<(String, Vec<usize>, Vec<f32>)> {
    let mut rng = Lcg(7);
    let mut out = Vec::new();
    let mut add = |name: String, shape: Vec<usize>, scale: f32, offset: f32| {
        let n = shape.iter().product();
        let values = (0..n).map(|_| offset + scale * rng.next()).collect();
        out.push((name, shape, values));
    };
    let (h, e) = (HIDDEN, "bert.embeddings");
    add(
        format!("{e}.word_embeddings.weight"),
        vec![vocab, h],
        1.0,
        0.0,
    );
    add(
        format!("{e}.position_embeddings.weight"),
        vec![POSITIONS, h],
        0.5,
        0.0,
    );
    add(
        format!("{e}.token_type_embeddings.weight"),
        vec![2, h],
        0.5,
        0.0,
    );
    let norm = |add: &mut dyn FnMut(String, Vec<usize>, f32, f32), name: String| {
        add(format!("{name}.weight"), vec![h], 0.2, 1.0);
        add(format!("{name}.bias"), vec![h], 0.2, 0.0);
    };
    let dense = |add: &mut dyn FnMut(String, Vec<usize>, f32, f32),
                 name: String,
                 inputs: usize,
                 outputs: usize| {
        add(
            format!("{name}.weight"),
            vec![outputs, inputs],
            1.7 / (inputs as f32).sqrt(),
            0.0,
        );
        add(format!("{name}.bias"), vec![outputs], 0.2, 0.0);
    };
    norm(&mut add, format!("{e}.LayerNorm"));
    for i in 0..LAYERS {
        let p = format!("bert.encoder.layer.{i}");
        for part in ["query", "key", "value"] {
            dense(&mut add, format!("{p}.attention.self.{part}"), h, h);
        }
        dense(&mut add, format!("{p}.attention.output.dense"), h, h);
        norm(&mut add, format!("{p}.attention.output.LayerNorm"));
        dense(&mut add, format!("{p}.intermediate.dense"), h, INNER);
        dense(&mut add, format!("{p}.output.dense"), INNER, h);
        norm(&mut add, format!("{p}.output.LayerNorm"));
    }
    dense(&mut add, "bert.pooler.dense".into(), h, h);
    add("classifier.weight".into(), vec![1, h], 1.5, 0.0);
    add("classifier.bias".into(), vec![1], 0.0, 5.2);
    out
}

/// The bytes of a safetensors file holding `tensors` as F32.
fn safetensors(tensors: &[(String, Vec<usize>, Vec<f32>)]) -> Vec<u8> {
    let mut header = serde_json::Map::new();
    let mut data = Vec::new();
    for (name, shape, values) in tensors {
        let start = data.len();
        data.extend(values.iter().flat_map(|v| v.to_le_bytes()));
        header.insert(name.clone(), serde_json::json!({"dtype": "F32", "shape": shape, "data_offsets": [start, data.len()]}));
    }
    let header = serde_json::Value::Object(header).to_string();
    let mut out = (header.len() as u64).to_le_bytes().to_vec();
    out.extend(header.as_bytes());
    out.extend(data);
    out
}

/// A column of floats per document id.
fn floats(b: &datafusion::arrow::array::RecordBatch, name: &str) -> Vec<f64> {
    let c = datafusion::arrow::compute::cast(
        b.column_by_name(name).unwrap(),
        &datafusion::arrow::datatypes::DataType::Float64,
    )
    .unwrap();
    let c = c
        .as_any()
        .downcast_ref::<datafusion::arrow::array::Float64Array>()
        .unwrap();
    (0..c.len()).map(|i| c.value(i)).collect()
}

/// `queries/fineweb-edu.sql` over the repository's sample, with the model in the workspace's
/// `edu/` folder, writing under `to/`.
pub fn fineweb_edu(ws: &Workspace, to: &str, extra: &[&str]) -> Run {
    let sets = [
        format!("edu_model={}", ws.at("edu")),
        format!("output={}", ws.at(&format!("{to}/out/"))),
        format!("rejects={}", ws.at(&format!("{to}/rejects/"))),
    ];
    let mut args = vec!["--quiet"];
    sets.iter().for_each(|s| args.extend(["--set", s.as_str()]));
    args.extend(extra);
    ws.run("queries/fineweb-edu.sql", &args)
}

/// The rows of an output folder as doc id -> (score, text), to compare runs.
pub fn scored(ws: &Workspace, rel: &str) -> BTreeMap<String, (u64, String)> {
    let b = ws.output(rel).batch;
    let ids = strings(&b, "doc_id");
    let texts = strings(&b, "text");
    let scores = floats(&b, "edu_score");
    ids.into_iter()
        .zip(scores)
        .zip(texts)
        .map(|((id, s), t)| (id.unwrap(), (s.to_bits(), t.unwrap())))
        .collect()
}

#[test]
fn fineweb_edu_keeps_documents_whose_integer_score_reaches_the_threshold_and_accounts_for_every_row(
) {
    let ws = Workspace::new();
    tiny_bert(&ws.path().join("edu"));
    let one = fineweb_edu(&ws, "one", &["--partitions", "1"]);
    let kept = ws.output("one/out").batch;
    let rejected = ws.output("one/rejects").batch;
    assert!(kept.num_rows() > 0 && rejected.num_rows() > 0);
    let a = one.accounting("one/out");
    let counts = (
        a["input_rows"].as_u64(),
        a["kept"].as_u64(),
        a["rejected"].as_u64(),
    );
    assert_eq!(
        counts,
        (
            Some((kept.num_rows() + rejected.num_rows()) as u64),
            Some(kept.num_rows() as u64),
            Some(rejected.num_rows() as u64)
        ),
        "{a}"
    );
    // Kept rows reach the threshold; rejected scored rows fall short and say by how much.
    for (score, int) in floats(&kept, "edu_score")
        .into_iter()
        .zip(floats(&kept, "edu_int_score"))
    {
        assert!(
            int >= 3.0 && int == score.clamp(0.0, 5.0).round(),
            "{score} {int}"
        );
    }
    let reasons: Vec<String> = strings(&rejected, "filter_reason")
        .into_iter()
        .flatten()
        .collect();
    let by_score: Vec<&String> = reasons
        .iter()
        .filter(|r| r.starts_with("edu_score:"))
        .collect();
    assert!(
        !by_score.is_empty()
            && by_score
                .iter()
                .all(|r| ["edu_score:0", "edu_score:1", "edu_score:2"].contains(&r.as_str())),
        "{reasons:?}"
    );
    assert!(
        reasons.iter().any(|r| !r.starts_with("edu_score:")),
        "the cascade rejects some rows first: {reasons:?}"
    );
    // The score is the model's logit of the kept text, as model_logits gives it in a query.
    let recheck = ws.recipe(
        "recheck.sql",
        &format!("COPY (SELECT doc_id, model_logits(text, '{}')[1] AS edu_score, text FROM read_parquet('{{ws}}/one/out/')) TO '{{ws}}/recheck/' STORED AS PARQUET;", ws.at("edu")),
    );
    ws.run(&recheck, &["--quiet"]);
    assert_eq!(scored(&ws, "recheck"), scored(&ws, "one/out"));
    // The same rows, bit for bit, on two partitions.
    fineweb_edu(&ws, "two", &["--partitions", "2"]);
    assert_eq!(scored(&ws, "two/out"), scored(&ws, "one/out"));
    assert_eq!(
        ws.output("two/rejects").batch.num_rows(),
        rejected.num_rows()
    );
}

#[test]
fn model_functions_give_embeddings_and_predictions_in_sql() {
    let ws = Workspace::new();
    tiny_bert(&ws.path().join("m"));
    let m = ws.at("m");
    let out = tokq_ok(&["sql", "--format", "csv", "-c", &format!(
        "SELECT cardinality(model_embed('Plants make sugar.', '{m}')) AS mean, cardinality(model_embed('Plants', '{m}', 'pooler')) AS pooler, \
         model_predict('Plants make sugar.', '{m}')[1]['label'] AS label, \
         model_predict('Plants make sugar.', '{m}')[1]['score'] = model_logits('Plants make sugar.', '{m}')[1] AS raw, \
         model_logits(NULL, '{m}') IS NULL AS null_gives_null, cardinality(model_logits('', '{m}')) AS empty"
    )]);
    assert_eq!(
        out.lines().nth(1),
        Some("16,16,LABEL_0,true,true,1"),
        "{out}"
    );
}

#[test]
fn a_model2vec_folder_embeds_and_classifies_in_sql() {
    let ws = Workspace::new();
    tiny_static(&ws.path().join("m"), true);
    let m = ws.at("m");
    let out = tokq_ok(&["sql", "--format", "csv", "-c", &format!(
        "SELECT cardinality(model_embed('Plants make sugar.', '{m}')) AS dims, \
         round(array_distance(model_embed('Plants make sugar.', '{m}'), [0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0]), 4) AS norm, \
         model_embed('', '{m}') = [0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0] AS empty_is_zero, \
         cardinality(model_predict('Plants make sugar.', '{m}', -1)) AS labels, \
         model_predict('Plants make sugar.', '{m}')[1]['label'] IN ('low', 'mid', 'high') AS named"
    )]);
    assert_eq!(out.lines().nth(1), Some("8,1.0,true,3,true"), "{out}");
}

#[test]
fn bad_model_folders_and_arguments_are_one_line_naming_the_file() {
    let ws = Workspace::new();
    let good = ws.path().join("good");
    tiny_bert(&good);
    let copy = |name: &str| {
        let dir = ws.path().join(name);
        std::fs::create_dir_all(&dir).unwrap();
        for f in [
            "config.json",
            "tokenizer.json",
            "tokenizer_config.json",
            "model.safetensors",
        ] {
            std::fs::copy(good.join(f), dir.join(f)).unwrap();
        }
        dir
    };
    let no_weights = copy("no-weights");
    std::fs::rename(
        no_weights.join("model.safetensors"),
        no_weights.join("pytorch_model.bin"),
    )
    .unwrap();
    let truncated = copy("truncated");
    let bytes = std::fs::read(truncated.join("model.safetensors")).unwrap();
    std::fs::write(
        truncated.join("model.safetensors"),
        &bytes[..bytes.len() / 2],
    )
    .unwrap();
    let gpt2 = copy("gpt2");
    let config = std::fs::read_to_string(gpt2.join("config.json"))
        .unwrap()
        .replace("\"bert\"", "\"gpt2\"");
    std::fs::write(gpt2.join("config.json"), config).unwrap();
    // ModernBERT and DeBERTa settings tokq cannot run are refused from config.json alone.
    let refused = |name: &str, model_type: &str, setting: &str| {
        let dir = copy(name);
        let config = std::fs::read_to_string(dir.join("config.json"))
            .unwrap()
            .replace("\"bert\"", &format!("\"{model_type}\", {setting}"));
        std::fs::write(dir.join("config.json"), config).unwrap();
        dir
    };
    let scaled = refused("scaled", "modernbert", r#""rope_scaling": {"rope_type": "linear", "factor": 2.0}"#);
    let grouped = refused("grouped", "deberta-v2", r#""conv_kernel_size": 3, "conv_groups": 4"#);
    let small = copy("small-vocab");
    let config = std::fs::read_to_string(small.join("config.json"))
        .unwrap()
        .replace(
            &format!("\"vocab_size\":{}", vocab().len()),
            "\"vocab_size\":20",
        );
    std::fs::write(small.join("config.json"), config).unwrap();
    tiny_static(&ws.path().join("static"), false);
    tiny_static(&ws.path().join("legacy"), false);
    std::fs::write(ws.path().join("legacy/pipeline.skops"), b"PK").unwrap();
    let cases = [
        (
            format!("model_logits(text, '{}')", ws.at("nowhere")),
            "is not a folder: give the folder that holds config.json",
        ),
        (
            format!("model_logits(text, '{}')", no_weights.display()),
            "model.safetensors: missing: tokq reads one model.safetensors file",
        ),
        (
            format!("model_logits(text, '{}')", truncated.display()),
            "the file is damaged or truncated",
        ),
        (
            format!("model_logits(text, '{}')", gpt2.display()),
            "config.json: model_type 'gpt2' is not supported yet",
        ),
        (
            format!("model_logits(text, '{}')", scaled.display()),
            "config.json: rope_scaling is not supported",
        ),
        (
            format!("model_logits(text, '{}')", grouped.display()),
            "config.json: conv_groups other than 1 is not supported",
        ),
        (
            format!("model_logits(text, '{}')", small.display()),
            "tokenizer.json: gives ids up to",
        ),
        (
            format!("model_embed(text, '{}', 'max')", good.display()),
            "pooling 'max' is not mean, cls or pooler",
        ),
        (
            format!("model_predict(text, '{}', 0)", good.display()),
            "k must be -1 (all labels) or at least 1, got 0",
        ),
        (
            format!("model_embed(text, '{}', 'cls')", ws.at("static")),
            "a Model2Vec model pools by its mean only",
        ),
        (
            format!("model_logits(text, '{}')", ws.at("static")),
            "the model has no classification head",
        ),
        (
            format!("model_logits(text, '{}')", ws.at("legacy")),
            "pipeline.skops: model2vec's old head format",
        ),
    ];
    for (call, want) in cases {
        let err = tokq_err(&[
            "sql",
            "-c",
            &format!("SELECT {call} FROM (VALUES ('a')) AS t(text)"),
        ]);
        assert!(
            err.contains(want) && err.lines().count() == 1,
            "{call}: {err}"
        );
    }
}

#[test]
fn nemotron_cc_buckets_each_classifier_by_percentile_and_keeps_the_higher_bucket() {
    let Some(lid) = crate::classify::lid176() else {
        return;
    };
    let ws = Workspace::new();
    tiny_bert(&ws.path().join("edu"));
    let sets = [
        format!("quality_model={lid}"),
        "label=en".to_string(),
        format!("edu_model={}", ws.at("edu")),
        "buckets=4".to_string(),
        "min_bucket=1".to_string(),
        format!("output={}", ws.at("out/")),
        format!("rejects={}", ws.at("rejects/")),
        format!("work={}", ws.at("work/")),
    ];
    let mut args = vec!["--quiet", "--partitions", "2"];
    sets.iter().for_each(|s| args.extend(["--set", s.as_str()]));
    let run = ws.run("queries/nemotron-cc.sql", &args);
    let (kept, rejected) = (ws.output("out").batch, ws.output("rejects").batch);
    let a = run.accounting("out");
    assert_eq!(
        (a["kept"].as_u64(), a["rejected"].as_u64()),
        (
            Some(kept.num_rows() as u64),
            Some(rejected.num_rows() as u64)
        ),
        "{a}"
    );
    let n = kept.num_rows() + rejected.num_rows();
    let mut rows = Vec::new();
    for b in [&kept, &rejected] {
        let cols: Vec<Vec<f64>> = [
            "fasttext_score",
            "edu_score",
            "fasttext_bucket",
            "edu_bucket",
            "quality_bucket",
        ]
        .iter()
        .map(|c| floats(b, c))
        .collect();
        rows.extend(
            (0..b.num_rows()).map(|i| [cols[0][i], cols[1][i], cols[2][i], cols[3][i], cols[4][i]]),
        );
    }
    for (score, bucket) in [(0, 2), (1, 3)] {
        // Buckets follow the score (equal scores, as duplicated pages give, may straddle two) and
        // hold a quarter of the documents each.
        rows.sort_by(|x, y| {
            x[score]
                .total_cmp(&y[score])
                .then(x[bucket].total_cmp(&y[bucket]))
        });
        assert!(
            rows.windows(2).all(|w| w[0][bucket] <= w[1][bucket]),
            "buckets out of score order"
        );
        for b in 0..4 {
            let size = rows.iter().filter(|r| r[bucket] == b as f64).count();
            assert!(
                size == n / 4 || size == n / 4 + 1,
                "bucket {b} holds {size} of {n}"
            );
        }
    }
    assert!(rows.iter().all(|r| r[4] == r[2].max(r[3])));
    let reasons: Vec<String> = strings(&rejected, "filter_reason")
        .into_iter()
        .flatten()
        .collect();
    assert!(
        !reasons.is_empty() && reasons.iter().all(|r| r == "quality_bucket:0"),
        "{reasons:?}"
    );
}

#[test]
fn a_model_pinned_by_its_weights_hash_runs_and_is_refused_once_damaged() {
    use sha2::Digest;
    let ws = Workspace::new();
    tiny_bert(&ws.path().join("m"));
    let m = ws.at("m");
    ws.file("d.jsonl", "{\"text\": \"Plants make sugar.\"}\n");
    let weights = ws.path().join("m/model.safetensors");
    let hash = hex::encode(sha2::Sha256::digest(std::fs::read(&weights).unwrap()));
    let runs = std::cell::Cell::new(0);
    let predict = |spec: &str| {
        runs.set(runs.get() + 1);
        format!("COPY (SELECT model_predict(text, '{spec}')[1]['label'] AS label FROM read_jsonl('{{ws}}/d.jsonl')) TO '{{ws}}/o{}/' STORED AS CSV", runs.get())
    };

    let run = ws.run_sql(&predict(&m));
    assert_eq!(run.stats["models"][&m].as_str(), Some(hash.as_str()), "the stats name the weights' hash: {}", run.stats);
    assert!(run.stderr.contains(&format!("tokq: model {m}: sha256 {hash}")), "{}", run.stderr);
    ws.run_sql(&predict(&format!("{m}#sha256={hash}")));

    let mut bytes = std::fs::read(&weights).unwrap();
    let last = bytes.len() - 1;
    bytes[last] ^= 0x01;
    std::fs::write(&weights, &bytes).unwrap();
    let err = ws.fails(&ws.recipe("pinned.sql", &predict(&format!("{m}#sha256={hash}"))), &[]);
    assert!(err.contains(&format!("model {m}/model.safetensors: its sha256 is ")) && err.contains(&format!("not the pinned {hash}")), "{err}");
}

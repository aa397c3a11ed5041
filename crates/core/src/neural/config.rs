//! A model folder's `config.json`, as `transformers` writes it: the encoder's shape, its labels
//! and what its output means.

use std::sync::Arc;

use serde_json::Value;

use super::ops::Activation;

/// Which encoder the weights belong to; each names its tensors and positions its own way.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Family {
    /// `bert`: absolute positions from 0, a tanh pooler over `[CLS]`.
    Bert,
    /// `roberta`, `xlm-roberta`, `camembert`: positions after the padding id, a two-layer head
    /// over `<s>`.
    Roberta,
    /// `deberta-v2` (DeBERTa-v2 and v3): disentangled attention over relative positions
    /// ([`Deberta`] holds its settings), a pooler with an activation over `[CLS]`.
    Deberta,
    /// `modernbert`: rotary positions, global and sliding-window layers, gated feed-forward,
    /// norms before each block ([`Modern`] holds its settings).
    ModernBert,
}

/// ModernBERT's own settings, with `transformers`' defaults where `config.json` omits a key.
#[derive(Debug, Clone)]
pub(crate) struct Modern {
    /// Per layer, whether it attends over the whole sequence (else within `window` tokens either
    /// side): `layer_types`, or every `global_attn_every_n_layers`-th layer from the first.
    pub global: Vec<bool>,
    /// Half of `local_attention`: a local layer's query sees keys at most this far away.
    pub window: usize,
    /// The rotary base of global and of local layers.
    pub theta_global: f64,
    pub theta_local: f64,
    pub norm_bias: bool,
    pub attention_bias: bool,
    pub mlp_bias: bool,
    pub classifier_bias: bool,
    pub classifier_activation: Activation,
    /// `classifier_pooling`: the head reads the mean of every token (`mean`) or the first (`cls`).
    pub mean_pooling: bool,
}

/// What the logits of a classifier mean, from `problem_type` (or the number of labels).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Problem {
    /// One output, a score (FineWeb-Edu's educational value).
    Regression,
    /// One label of many: softmax.
    SingleLabel,
    /// Any labels: a sigmoid each.
    MultiLabel,
}

/// The settings tokq reads from `config.json`.
#[derive(Debug, Clone)]
pub(crate) struct Config {
    pub family: Family,
    /// The prefix of the encoder's tensor names in a task model (`bert.`, `roberta.`).
    pub prefix: &'static str,
    pub vocab: usize,
    pub hidden: usize,
    pub layers: usize,
    pub heads: usize,
    pub intermediate: usize,
    pub activation: Activation,
    pub eps: f32,
    pub positions: usize,
    pub type_vocab: usize,
    pub pad_id: u32,
    /// `id2label`'s names by id (`LABEL_0`... where the file has none).
    pub labels: Vec<Arc<str>>,
    pub problem: Problem,
    /// ModernBERT's settings; `None` for the other families.
    pub modern: Option<Modern>,
    /// DeBERTa-v2's settings; `None` for the other families.
    pub deberta: Option<Deberta>,
}

impl Config {
    /// Reads the settings from `config.json`'s text; an error says which key is at fault.
    pub(crate) fn parse(json: &str) -> Result<Self, String> {
        let v: Value = serde_json::from_str(json).map_err(|e| format!("not JSON: {e}"))?;
        let model_type = v["model_type"].as_str().unwrap_or_default();
        let (family, prefix) = match model_type {
            "bert" => (Family::Bert, "bert"),
            "roberta" | "xlm-roberta" | "camembert" => (Family::Roberta, "roberta"),
            "modernbert" => (Family::ModernBert, "model"),
            "deberta-v2" => (Family::Deberta, "deberta"),
            other => {
                return Err(format!("model_type '{other}' is not supported yet: tokq runs bert, roberta, xlm-roberta, camembert, deberta-v2 and modernbert encoders"));
            }
        };
        let size = |key: &str| -> Result<usize, String> {
            v[key]
                .as_u64()
                .map(|n| n as usize)
                .filter(|&n| n > 0)
                .ok_or_else(|| format!("'{key}' is missing or not a positive integer"))
        };
        if let Some(p) = v["position_embedding_type"]
            .as_str()
            .filter(|&p| p != "absolute")
        {
            return Err(format!(
                "position_embedding_type '{p}' is not supported (absolute only)"
            ));
        }
        let (hidden, heads) = (size("hidden_size")?, size("num_attention_heads")?);
        if hidden % heads != 0 {
            return Err(format!(
                "hidden_size {hidden} is not a multiple of num_attention_heads {heads}"
            ));
        }
        let labels = labels(&v)?;
        let problem = match v["problem_type"].as_str() {
            Some("regression") => Problem::Regression,
            Some("multi_label_classification") => Problem::MultiLabel,
            Some("single_label_classification") => Problem::SingleLabel,
            // transformers decides at training time: one label is a regression.
            None if labels.len() == 1 => Problem::Regression,
            None => Problem::SingleLabel,
            Some(other) => {
                return Err(format!(
                    "problem_type '{other}' is not one transformers knows"
                ))
            }
        };
        let layers = size("num_hidden_layers")?;
        let modern = (family == Family::ModernBert)
            .then(|| Modern::parse(&v, layers))
            .transpose()?;
        let positions = size("max_position_embeddings")?;
        let deberta = (family == Family::Deberta)
            .then(|| Deberta::parse(&v, hidden, heads, positions))
            .transpose()?;
        // ModernBERT names two keys its own way; the defaults differ by family.
        let (act, eps) = match family {
            Family::ModernBert => ("hidden_activation", v["norm_eps"].as_f64().unwrap_or(1e-5)),
            Family::Deberta => ("hidden_act", v["layer_norm_eps"].as_f64().unwrap_or(1e-7)),
            _ => ("hidden_act", v["layer_norm_eps"].as_f64().unwrap_or(1e-12)),
        };
        let type_vocab = v["type_vocab_size"]
            .as_u64()
            .unwrap_or(if family == Family::Deberta { 0 } else { 2 }) as usize;
        Ok(Self {
            family,
            prefix,
            vocab: size("vocab_size")?,
            hidden,
            layers,
            heads,
            intermediate: size("intermediate_size")?,
            activation: Activation::named(act, v[act].as_str().unwrap_or("gelu"))?,
            eps: eps as f32,
            positions,
            type_vocab,
            pad_id: v["pad_token_id"].as_u64().unwrap_or(0) as u32,
            labels,
            problem,
            modern,
            deberta,
        })
    }

    /// How many tokens (specials included) a position table of this encoder can place.
    pub(crate) fn max_tokens(&self) -> usize {
        match self.family {
            Family::Bert | Family::ModernBert | Family::Deberta => self.positions,
            // RoBERTa numbers positions from pad_id + 1.
            Family::Roberta => self.positions.saturating_sub(self.pad_id as usize + 1),
        }
    }
}

impl Modern {
    /// ModernBERT's keys, in the older form the hub's folders hold (`global_attn_every_n_layers`,
    /// `global_rope_theta`, `local_rope_theta`) or the one transformers 5 writes (`layer_types`,
    /// `rope_parameters`).
    fn parse(v: &Value, layers: usize) -> Result<Self, String> {
        let global = match v["layer_types"].as_array() {
            Some(types) => {
                let global: Result<Vec<bool>, String> = types
                    .iter()
                    .map(|t| match t.as_str() {
                        Some("full_attention") => Ok(true),
                        Some("sliding_attention") => Ok(false),
                        _ => Err(format!("layer_types holds {t}, not full_attention or sliding_attention")),
                    })
                    .collect();
                global?
            }
            None => {
                let every = v["global_attn_every_n_layers"].as_u64().unwrap_or(3).max(1) as usize;
                (0..layers).map(|i| i % every == 0).collect()
            }
        };
        if global.len() != layers {
            return Err(format!("layer_types names {} layers, num_hidden_layers {layers}", global.len()));
        }
        let theta = |kind: &str, old: &str, default: f64| -> Result<f64, String> {
            let params = &v["rope_parameters"][kind];
            if let Some(t) = params["rope_type"].as_str().filter(|&t| t != "default") {
                return Err(format!("rope_parameters.{kind}.rope_type '{t}' is not supported (default only)"));
            }
            if !v["rope_scaling"].is_null() {
                return Err("rope_scaling is not supported: tokq runs ModernBERT's default rotary positions".into());
            }
            Ok(params["rope_theta"].as_f64().or(v[old].as_f64()).unwrap_or(default))
        };
        let flag = |key: &str| v[key].as_bool().unwrap_or(false);
        let mean_pooling = match v["classifier_pooling"].as_str().unwrap_or("cls") {
            "mean" => true,
            "cls" => false,
            other => return Err(format!("classifier_pooling '{other}' is not cls or mean")),
        };
        Ok(Self {
            global,
            window: v["local_attention"].as_u64().unwrap_or(128) as usize / 2,
            theta_global: theta("full_attention", "global_rope_theta", 160_000.0)?,
            theta_local: theta("sliding_attention", "local_rope_theta", 10_000.0)?,
            norm_bias: flag("norm_bias"),
            attention_bias: flag("attention_bias"),
            mlp_bias: flag("mlp_bias"),
            classifier_bias: flag("classifier_bias"),
            classifier_activation: Activation::named(
                "classifier_activation",
                v["classifier_activation"].as_str().unwrap_or("gelu"),
            )?,
            mean_pooling,
        })
    }
}

/// DeBERTa-v2's own settings, with `transformers`' defaults where `config.json` omits a key.
#[derive(Debug, Clone)]
pub(crate) struct Deberta {
    /// Whether attention adds relative-position terms at all (`relative_attention`).
    pub relative: bool,
    /// Content-to-position (`c2p`) and position-to-content (`p2c`) terms (`pos_att_type`).
    pub c2p: bool,
    pub p2c: bool,
    /// Relative distances fold into log buckets past half of this (`position_buckets`; 0: none).
    pub buckets: usize,
    /// `max_relative_positions`, or `max_position_embeddings` where it is below 1.
    pub max_relative: usize,
    /// The position terms reuse the content projections (`share_att_key`).
    pub share_key: bool,
    /// The relative embeddings pass a layer norm first (`norm_rel_ebd` holds `layer_norm`).
    pub norm_relative: bool,
    /// Absolute position embeddings added to the words (`position_biased_input`).
    pub absolute: bool,
    /// The word embeddings' width, projected to the hidden size where it differs.
    pub embedding: usize,
    /// The convolution after the first layer (`conv_kernel_size`; 0: none) and its activation.
    pub conv_kernel: usize,
    pub conv_activation: Activation,
    pub pooler_activation: Activation,
}

impl Deberta {
    fn parse(v: &Value, hidden: usize, heads: usize, positions: usize) -> Result<Self, String> {
        let int = |key: &str, default: i64| v[key].as_i64().unwrap_or(default);
        let types: Vec<String> = match &v["pos_att_type"] {
            Value::String(s) => s.split('|').map(|t| t.trim().to_lowercase()).collect(),
            Value::Array(a) => a.iter().filter_map(|t| t.as_str()).map(str::to_lowercase).collect(),
            _ => Vec::new(),
        };
        if let Some(t) = types.iter().find(|t| !matches!(t.as_str(), "c2p" | "p2c")) {
            return Err(format!("pos_att_type '{t}' is not c2p or p2c"));
        }
        if let Some(size) = v["attention_head_size"].as_u64().filter(|&s| s as usize * heads != hidden) {
            return Err(format!("attention_head_size {size} times {heads} heads is not hidden_size {hidden}: not supported"));
        }
        if v["pooler_hidden_size"].as_u64().is_some_and(|p| p as usize != hidden) {
            return Err("pooler_hidden_size differs from hidden_size: not supported".into());
        }
        if v["conv_groups"].as_u64().is_some_and(|g| g != 1) {
            return Err("conv_groups other than 1 is not supported".into());
        }
        if int("z_steps", 0) > 1 {
            return Err("z_steps above 1 is not supported".into());
        }
        let max_relative = match int("max_relative_positions", -1) {
            m if m < 1 => positions,
            m => m as usize,
        };
        let act = |key: &str, default: &str| Activation::named(key, v[key].as_str().unwrap_or(default));
        let norm = v["norm_rel_ebd"].as_str().unwrap_or("none").to_lowercase();
        Ok(Self {
            relative: v["relative_attention"].as_bool().unwrap_or(false),
            c2p: types.iter().any(|t| t == "c2p"),
            p2c: types.iter().any(|t| t == "p2c"),
            buckets: int("position_buckets", -1).max(0) as usize,
            max_relative,
            share_key: v["share_att_key"].as_bool().unwrap_or(false),
            norm_relative: norm.split('|').any(|n| n.trim() == "layer_norm"),
            absolute: v["position_biased_input"].as_bool().unwrap_or(true),
            embedding: v["embedding_size"].as_u64().map_or(hidden, |e| e as usize),
            conv_kernel: int("conv_kernel_size", 0).max(0) as usize,
            conv_activation: act("conv_act", "tanh")?,
            pooler_activation: act("pooler_hidden_act", "gelu")?,
        })
    }

    /// How many relative embeddings there are on either side (`position_buckets`, or
    /// `max_relative_positions` without buckets).
    pub(crate) fn span(&self) -> usize {
        if self.buckets > 0 {
            self.buckets
        } else {
            self.max_relative
        }
    }
}

/// `id2label` in id order, or as many `LABEL_i` as `num_labels` says (transformers' default: 2).
fn labels(v: &Value) -> Result<Vec<Arc<str>>, String> {
    match v["id2label"].as_object() {
        Some(map) => {
            let mut labels: Vec<Option<Arc<str>>> = vec![None; map.len()];
            for (id, label) in map {
                let slot = id.parse::<usize>().ok().and_then(|i| labels.get_mut(i));
                let slot = slot.ok_or_else(|| {
                    format!("id2label has id '{id}', not one of 0..{}", map.len())
                })?;
                *slot = Some(Arc::from(label.as_str().unwrap_or_default()));
            }
            Ok(labels.into_iter().flatten().collect())
        }
        None => Ok((0..v["num_labels"].as_u64().unwrap_or(2))
            .map(|i| Arc::from(format!("LABEL_{i}")))
            .collect()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const BERT: &str = r#"{"model_type": "bert", "vocab_size": 500, "hidden_size": 32, "num_hidden_layers": 2,
        "num_attention_heads": 4, "intermediate_size": 64, "max_position_embeddings": 64, "hidden_act": "gelu",
        "id2label": {"0": "LABEL_0"}}"#;

    #[test]
    fn one_label_is_a_regression_and_roberta_positions_start_after_padding() {
        let c = Config::parse(BERT).unwrap();
        assert_eq!(
            (c.family, c.problem, c.max_tokens(), c.labels.len()),
            (Family::Bert, Problem::Regression, 64, 1)
        );
        let r = Config::parse(
            &BERT
                .replace("\"bert\"", "\"xlm-roberta\"")
                .replace("\"hidden_act\"", "\"pad_token_id\": 1, \"hidden_act\""),
        )
        .unwrap();
        assert_eq!((r.family, r.max_tokens()), (Family::Roberta, 62));
    }

    #[test]
    fn unsupported_settings_are_named() {
        assert!(Config::parse(&BERT.replace("\"bert\"", "\"gpt2\""))
            .unwrap_err()
            .contains("model_type 'gpt2'"));
        assert!(Config::parse(&BERT.replace("\"gelu\"", "\"swish\""))
            .unwrap_err()
            .contains("hidden_act 'swish'"));
        assert!(
            Config::parse(&BERT.replace("\"hidden_size\": 32", "\"hidden_size\": 30"))
                .unwrap_err()
                .contains("multiple")
        );
        assert!(Config::parse(&BERT.replace("\"vocab_size\": 500,", ""))
            .unwrap_err()
            .contains("'vocab_size'"));
    }

    #[test]
    fn modernbert_reads_both_config_forms_and_refuses_rotary_scaling() {
        let modern = BERT.replace("\"bert\"", "\"modernbert\"");
        let old = Config::parse(&modern.replace("\"hidden_act\"", "\"global_attn_every_n_layers\": 2, \"local_rope_theta\": 500.0, \"hidden_activation\"")).unwrap();
        let m = old.modern.unwrap();
        assert_eq!((m.global, m.window, m.theta_global, m.theta_local), (vec![true, false], 64, 160_000.0, 500.0));
        assert_eq!(old.eps, 1e-5);
        let new = Config::parse(&modern.replace(
            "\"hidden_act\"",
            r#""layer_types": ["sliding_attention", "full_attention"], "local_attention": 8,
               "rope_parameters": {"full_attention": {"rope_type": "default", "rope_theta": 7.0},
                                   "sliding_attention": {"rope_type": "default", "rope_theta": 3.0}}, "hidden_act""#,
        ))
        .unwrap();
        let m = new.modern.unwrap();
        assert_eq!((m.global, m.window, m.theta_global, m.theta_local), (vec![false, true], 4, 7.0, 3.0));
        for (key, want) in [
            (r#""rope_scaling": {"type": "linear", "factor": 2.0}"#, "rope_scaling is not supported"),
            (r#""rope_parameters": {"full_attention": {"rope_type": "yarn"}}"#, "rope_type 'yarn'"),
            (r#""layer_types": ["full_attention"]"#, "names 1 layers"),
            (r#""classifier_pooling": "max""#, "classifier_pooling 'max'"),
        ] {
            let err = Config::parse(&modern.replace("\"hidden_act\"", &format!("{key}, \"hidden_act\""))).unwrap_err();
            assert!(err.contains(want), "{key}: {err}");
        }
    }

    #[test]
    fn deberta_reads_its_attention_settings_and_refuses_what_it_cannot_run() {
        let deberta = BERT.replace("\"bert\"", "\"deberta-v2\"");
        let v3 = Config::parse(&deberta.replace(
            "\"hidden_act\"",
            r#""relative_attention": true, "pos_att_type": ["p2c", "c2p"], "position_buckets": 16,
               "norm_rel_ebd": "layer_norm", "share_att_key": true, "position_biased_input": false, "hidden_act""#,
        ))
        .unwrap();
        let d = v3.deberta.unwrap();
        assert!(d.relative && d.c2p && d.p2c && d.share_key && d.norm_relative && !d.absolute);
        assert_eq!((d.span(), d.max_relative, v3.type_vocab, v3.eps), (16, 64, 0, 1e-7));
        let old = Config::parse(&deberta.replace("\"hidden_act\"", r#""pos_att_type": "C2P", "hidden_act""#)).unwrap();
        let d = old.deberta.unwrap();
        assert!(d.c2p && !d.p2c && d.absolute);
        for (key, want) in [
            (r#""pos_att_type": ["c2c"]"#, "pos_att_type 'c2c'"),
            (r#""conv_groups": 2"#, "conv_groups"),
            (r#""z_steps": 2"#, "z_steps"),
            (r#""pooler_hidden_size": 8"#, "pooler_hidden_size"),
            (r#""conv_act": "swish""#, "conv_act 'swish' is not supported"),
        ] {
            let err = Config::parse(&deberta.replace("\"hidden_act\"", &format!("{key}, \"hidden_act\""))).unwrap_err();
            assert!(err.contains(want), "{key}: {err}");
        }
    }
}

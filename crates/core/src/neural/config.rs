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
}

impl Config {
    /// Reads the settings from `config.json`'s text; an error says which key is at fault.
    pub(crate) fn parse(json: &str) -> Result<Self, String> {
        let v: Value = serde_json::from_str(json).map_err(|e| format!("not JSON: {e}"))?;
        let model_type = v["model_type"].as_str().unwrap_or_default();
        let (family, prefix) = match model_type {
            "bert" => (Family::Bert, "bert"),
            "roberta" | "xlm-roberta" | "camembert" => (Family::Roberta, "roberta"),
            other => {
                return Err(format!("model_type '{other}' is not supported yet: tokq runs bert, roberta, xlm-roberta and camembert encoders"));
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
        Ok(Self {
            family,
            prefix,
            vocab: size("vocab_size")?,
            hidden,
            layers: size("num_hidden_layers")?,
            heads,
            intermediate: size("intermediate_size")?,
            activation: Activation::named(v["hidden_act"].as_str().unwrap_or("gelu"))?,
            eps: v["layer_norm_eps"].as_f64().unwrap_or(1e-12) as f32,
            positions: size("max_position_embeddings")?,
            type_vocab: v["type_vocab_size"].as_u64().unwrap_or(2) as usize,
            pad_id: v["pad_token_id"].as_u64().unwrap_or(0) as u32,
            labels,
            problem,
        })
    }

    /// How many tokens (specials included) a position table of this encoder can place.
    pub(crate) fn max_tokens(&self) -> usize {
        match self.family {
            Family::Bert => self.positions,
            // RoBERTa numbers positions from pad_id + 1.
            Family::Roberta => self.positions.saturating_sub(self.pad_id as usize + 1),
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
}

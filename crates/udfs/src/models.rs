//! Hugging Face encoder classifiers in SQL: `model_logits`, `model_predict` and `model_embed`,
//! each a few lines over `tokq_core::neural`.
//!
//! A model travels as a literal folder path and each process loads it once
//! ([`tokq_core::neural::cached`]), so the functions stay stateless and run on Ballista
//! executors. Planning loads it too: a missing file, an unsupported architecture or a tokenizer
//! that does not fit the model fails before any data is read. Each row is one document and one
//! forward pass on the partition's own thread.

use std::sync::Arc;

use datafusion::arrow::datatypes::DataType;
use datafusion::common::Result;
use datafusion::logical_expr::{ColumnarValue, ScalarFunctionArgs, ScalarUDF};
use tokq_core::neural::{cached, Model, Pooling};
use tokq_core::TokqError;

use crate::args::{df, for_each_str, Consts};
use crate::kit::{doc, Body, Scores, Udf, Value, NEEDS_FILE};

/// One document through a model, with the call's constants bound.
type Run<T> = Box<dyn Fn(&str) -> tokq_core::Result<T> + Send + Sync>;

/// A model function: binds its constants to a [`Run`], then runs every row through it.
struct ModelFn<T: Value> {
    name: &'static str,
    bind: fn(&'static str, &Consts) -> Result<Run<T>, TokqError>,
}

impl<T: Value> Body for ModelFn<T> {
    type Consts = Run<T>;
    const FIRST_CONST: usize = 1;

    fn consts(&self, c: &Consts) -> Result<Run<T>, TokqError> {
        (self.bind)(self.name, c)
    }

    fn return_type(&self) -> DataType {
        T::data_type().unwrap_or(DataType::Null)
    }

    fn invoke(&self, run: Run<T>, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let texts = args.args[0].to_array(args.number_rows)?;
        let mut out = T::builder(texts.len(), &self.return_type())?;
        for_each_str(self.name, &texts, |t| {
            let value = t.map(&run).transpose().map_err(df)?;
            T::append(&mut out, value, t.unwrap_or_default());
            Ok(())
        })?;
        Ok(ColumnarValue::Array(T::finish(out)?))
    }
}

/// The model a `model` argument names, checked to have a classification head where `head`.
fn model(name: &'static str, c: &Consts, head: bool) -> Result<Arc<Model>, TokqError> {
    let m = cached(c.str(1, "model")?.unwrap_or_default())?;
    if head && !m.has_head() {
        return Err(TokqError::Argument { function: name, cause: "the model has no classification head (a ...ForSequenceClassification folder): use model_embed".into() });
    }
    Ok(m)
}

fn logits(name: &'static str, c: &Consts) -> Result<Run<Vec<f32>>, TokqError> {
    let m = model(name, c, true)?;
    Ok(Box::new(move |t| m.logits(t)))
}

fn predict(name: &'static str, c: &Consts) -> Result<Run<Scores>, TokqError> {
    let m = model(name, c, true)?;
    let k = match c.i64(2, "k", 1)? {
        -1 => usize::MAX,
        k @ 1.. => k as usize,
        k => {
            return Err(TokqError::Argument {
                function: name,
                cause: format!("k must be -1 (all labels) or at least 1, got {k}"),
            })
        }
    };
    Ok(Box::new(move |t| {
        let labels = m.labels();
        Ok(Scores(
            m.predict(t, k)?
                .into_iter()
                .map(|p| (Arc::clone(&labels[p.label]), f64::from(p.score)))
                .collect(),
        ))
    }))
}

fn embed(name: &'static str, c: &Consts) -> Result<Run<Vec<f32>>, TokqError> {
    let m = model(name, c, false)?;
    let pooling = Pooling::named(c.str(2, "pooling")?.unwrap_or("mean")).map_err(|cause| {
        TokqError::Argument {
            function: name,
            cause,
        }
    })?;
    if !m.can_pool(pooling) {
        let cause = match pooling {
            Pooling::Pooler => "the model has no pooler (pooler.dense): use 'mean' or 'cls'",
            _ => "a Model2Vec model pools by its mean only: use 'mean'",
        };
        return Err(TokqError::Argument {
            function: name,
            cause: cause.into(),
        });
    }
    Ok(Box::new(move |t| m.embed(t, pooling)))
}

const MODEL: &str = "A constant path of a Hugging Face model folder as the hub stores it: config.json, model.safetensors, \
                     tokenizer.json and tokenizer_config.json (hf download ORG/NAME --local-dir DIR; tokq downloads nothing). \
                     BERT, RoBERTa, XLM-RoBERTa, DeBERTa-v2/v3 and ModernBERT encoders, and Model2Vec static models. Each process loads it once. \
                     DIR#sha256=HEX pins model.safetensors to that hash (the run's stats list it).";

/// An example over `sql`, marked as needing a model folder.
fn example(sql: &str) -> String {
    format!("```sql\n{NEEDS_FILE}a model folder: hf download HuggingFaceFW/fineweb-edu-classifier --local-dir models/fineweb-edu-classifier\n{sql}\n```")
}

/// Every model function.
pub fn functions() -> Vec<Arc<ScalarUDF>> {
    let sig = crate::kit::arities;
    vec![
        Udf::new(
            "model_logits",
            sig(2..=2),
            ModelFn { name: "model_logits", bind: logits },
            doc(
                "The logits of a Hugging Face sequence-classification model for a text, as transformers' \
                 AutoModelForSequenceClassification computes them in fp32 (within 1e-4): the tokenizer's own special \
                 tokens, truncation to the model's maximum length (tokenizer_config.json's model_max_length, at most \
                 the model's positions), the encoder, its pooling and head. One float per label; FineWeb-Edu's \
                 classifier gives one, its educational score. For a Model2Vec classifier (model2vec's StaticModelPipeline), \
                 its head's outputs over the embedding. NULL gives NULL; an empty text is the special tokens alone.",
                "model_logits(text, model)",
            )
            .with_argument("text", "The text to score.")
            .with_argument("model", MODEL)
            .with_sql_example(example("SELECT model_logits('Photosynthesis turns light into chemical energy.', 'models/fineweb-edu-classifier')[1] AS score;"))
            .with_related_udf("model_predict")
            .build(),
        ),
        Udf::new(
            "model_predict",
            sig(2..=3),
            ModelFn { name: "model_predict", bind: predict },
            doc(
                "The k best labels of a text under a Hugging Face sequence-classification model, best first, as a \
                 list of {label, score} in the shape of fasttext_predict: labels from config.json's id2label (a \
                 Model2Vec head's classes), scores the softmax of the logits (a sigmoid each for problem_type \
                 multi_label_classification or a sigmoid head; for a one-logit regression model, its one label with \
                 the raw score). NULL gives NULL.",
                "model_predict(text, model [, k])",
            )
            .with_argument("text", "The text to classify.")
            .with_argument("model", MODEL)
            .with_argument("k", "Optional constant: how many labels (default 1); -1 for every label.")
            .with_sql_example(example("SELECT model_predict('Photosynthesis turns light into chemical energy.', 'models/fineweb-edu-classifier');"))
            .with_related_udf("model_logits")
            .build(),
        ),
        Udf::new(
            "model_embed",
            sig(2..=3),
            ModelFn { name: "model_embed", bind: embed },
            doc(
                "A pooled embedding of a text from a Hugging Face encoder (with or without a classification head), as \
                 transformers computes the last hidden states in fp32: 'mean' (default) averages every token's state, \
                 special tokens included (sentence-transformers' mean pooling of one unpadded text); 'cls' takes the \
                 first token's; 'pooler' is BERT's pooler_output. For a Model2Vec folder (model_type model2vec), \
                 model2vec's StaticModel.encode: the mean of the token vectors, normalized where its config says. NULL gives NULL.",
                "model_embed(text, model [, pooling])",
            )
            .with_argument("text", "The text to embed.")
            .with_argument("model", MODEL)
            .with_argument("pooling", "Optional constant: 'mean' (default), 'cls' or 'pooler'.")
            .with_sql_example(example("SELECT cardinality(model_embed('Photosynthesis turns light into chemical energy.', 'models/fineweb-edu-classifier')) AS dims;"))
            .with_related_udf("model_logits")
            .build(),
        ),
    ]
}

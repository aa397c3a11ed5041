//! The quality filters in SQL, generated from the one filter registry
//! (`tokq_core::quality::registry::FILTERS`): for each filter `f`, `f(text [, params])` gives
//! datatrove's reason or NULL and `f_signals(text [, params])` the numbers behind its rules; then
//! `c4_filter_lines` and `quality_chain`.

use std::sync::Arc;

use datafusion::arrow::datatypes::{DataType, Field};
use datafusion::common::ScalarValue;
use datafusion::logical_expr::ScalarUDF;
use tokq_core::quality::c4::C4Quality;
use tokq_core::quality::chain::Chain;
use tokq_core::quality::registry::{FilterInfo, FILTERS};
use tokq_core::quality::Doc;
use tokq_core::TokqError;

use crate::args::Consts;
use crate::kit::{doc, str_fn, str_fn_struct, Cell, Row};

/// The rule parameters of the second argument: a string (`'min_doc_words=20'`), or for C4 a
/// BOOLEAN `filter_no_terminal_punct` as datatrove's constructor takes it.
fn params(c: &Consts, c4: bool) -> Result<String, TokqError> {
    match c.get(1, "params")? {
        Some(ScalarValue::Boolean(Some(b))) if c4 => Ok(format!("filter_no_terminal_punct={b}")),
        _ => Ok(c.str(1, "params")?.unwrap_or_default().to_string()),
    }
}

const PARAMS: &str = "Optional constant rule parameters, 'key=value,key=value', keys named as the datatrove \
                      constructor's arguments; a number sets a threshold, none disables the rule. An unknown key \
                      is an error at planning time that lists the known ones.";

fn reason(f: &'static FilterInfo) -> Arc<ScalarUDF> {
    let c4 = f.name == "c4_quality";
    str_fn::<&'static str>(
        f.name,
        1..=2,
        move |c| {
            let filter = f.build(&params(c, c4)?)?;
            Ok(Box::new(move |t| filter.check(&Doc::new(t)).reason()))
        },
        doc(
            &format!(
                "datatrove's {} decision on one document: the reason string of the first rule that drops it, \
                 exactly as datatrove names it, or NULL when the document is kept. It checks {}. NULL text gives NULL.",
                f.datatrove, f.checks
            ),
            &format!("{}(text [, params])", f.name),
        )
        .with_argument("text", "The document.")
        .with_argument("params", if c4 { "As for the other filters, or a constant BOOLEAN: filter_no_terminal_punct." } else { PARAMS })
        .with_sql_example(format!("```sql\nSELECT {}('Too short.');\n```", f.name))
        .with_related_udf(f.signals)
        .with_related_udf("quality_chain")
        .build(),
    )
}

fn signals(f: &'static FilterInfo) -> Arc<ScalarUDF> {
    let c4 = f.name == "c4_quality";
    let names = f.build("").map(|d| d.signal_names()).unwrap_or(&[]);
    let fields = names.iter().map(|n| Field::new(*n, if n.starts_with("n_") { DataType::Int64 } else { DataType::Float64 }, true)).collect();
    str_fn_struct::<Row>(
        f.signals,
        1..=2,
        fields,
        move |c| {
            let filter = f.build(&params(c, c4)?)?;
            Ok(Box::new(move |t| Some(Row(filter.signals(&Doc::new(t)).into_iter().map(|x| Cell::F64(Some(x))).collect()))))
        },
        doc(
            &format!(
                "The numbers {}'s rules compare, as a struct with one field per signal ({}): counts are BIGINT \
                 (fields named n_*), ratios DOUBLE. Use them to choose thresholds from a sample before filtering. \
                 NULL text gives NULL.",
                f.name,
                names.join(", ")
            ),
            &format!("{}(text [, params])", f.signals),
        )
        .with_argument("text", "The document.")
        .with_argument("params", PARAMS)
        .with_sql_example(format!("```sql\nSELECT {}('The cat sat on the mat. It was happy there.');\n```", f.signals))
        .with_related_udf(f.name)
        .build(),
    )
}

fn c4_filter_lines() -> Arc<ScalarUDF> {
    str_fn::<String>(
        "c4_filter_lines",
        1..=2,
        |c| {
            let filter = C4Quality::with_params(&params(c, true)?)?;
            Ok(Box::new(move |t| filter.kept_text(t)))
        },
        doc(
            "The text datatrove's C4QualityFilter keeps: its line rules remove lines (no terminal punctuation, \
             too few words, javascript, policy lines), then its document rules decide. NULL when the document is \
             dropped, or for NULL text.",
            "c4_filter_lines(text [, params])",
        )
        .with_argument("text", "The document.")
        .with_argument("params", "As for c4_quality: a parameter string or a constant BOOLEAN filter_no_terminal_punct.")
        .with_sql_example("```sql\nSELECT c4_filter_lines('The cat sat on the mat. It was happy there.', false);\n```")
        .with_related_udf("c4_quality")
        .build(),
    )
}

fn quality_chain() -> Arc<ScalarUDF> {
    let fields = vec![Field::new("filter_reason", DataType::Utf8, true), Field::new("text", DataType::Utf8, true)];
    str_fn_struct::<Row>(
        "quality_chain",
        2..=2,
        fields,
        |c| {
            let chain = Chain::parse(c.str(1, "chain")?.unwrap_or_default())?;
            Ok(Box::new(move |t| {
                let o = chain.run(t);
                let reason = o.filter_reason();
                let text = match (o.dropped, o.text) {
                    (Some(_), _) => Cell::Str(None),
                    (None, Some(rewritten)) => Cell::Str(Some(rewritten)),
                    (None, None) => Cell::Input,
                };
                Some(Row(vec![Cell::Str(reason), text]))
            }))
        },
        doc(
            &format!(
                "Runs several filters over each document in one pass, as a datatrove pipeline of filters does: each \
                 sees the text the previous one kept, the first drop decides, and words are split once. Returns \
                 {{filter_reason: 'filter:reason' or NULL, text: the kept text (C4 may have removed lines) or NULL \
                 when dropped}}. Filters: {}. The preset 'fineweb' is FineWeb's cascade.",
                FILTERS.iter().map(|f| f.name).collect::<Vec<_>>().join(", ")
            ),
            "quality_chain(text, chain)",
        )
        .with_argument("text", "The document.")
        .with_argument(
            "chain",
            "A constant: 'filter; filter(key=value, ...); ...' with filters named as their SQL functions, or 'fineweb'. \
             Checked at planning time.",
        )
        .with_sql_example("```sql\nSELECT quality_chain('Too short.', 'fineweb')['filter_reason'];\n```")
        .build(),
    )
}

/// Every quality function.
pub fn functions() -> Vec<Arc<ScalarUDF>> {
    let mut v: Vec<_> = FILTERS.iter().map(reason).collect();
    v.extend(FILTERS.iter().map(signals));
    v.push(c4_filter_lines());
    v.push(quality_chain());
    v
}

//! The quality filters in SQL. Every function takes the text and an optional constant second
//! argument of rule parameters (`'min_doc_words=20,stop_words=the|a'`); `c4_*` also take
//! `filter_no_terminal_punct` as a BOOLEAN there. NULL text gives NULL.
//!
//! - `gopher_quality`, `gopher_repetition`, `fineweb_quality`, `c4_quality` -> reason or NULL.
//! - `c4_filter_lines` -> the text C4 keeps (NULL when it drops the document).
//! - `*_signals` -> a struct of the numbers behind the rules.
//! - `quality_chain(text, 'f1; f2(k=v); ...')` -> {filter_reason: 'filter:reason', text}.

use std::sync::Arc;

use datafusion::arrow::array::{Array, ArrayRef, Float64Builder, Int64Builder, StringBuilder, StructArray};
use datafusion::arrow::buffer::NullBuffer;
use datafusion::arrow::datatypes::{DataType, Field, Fields};
use datafusion::common::{exec_err, Result, ScalarValue};
use datafusion::logical_expr::{ColumnarValue, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature, TypeSignature, Volatility};

use super::chain::{filter_by_name, Chain};
use super::c4::C4Quality;
use super::Doc;
use crate::args::for_each_str;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Output {
    Reason,
    Signals,
    C4Lines,
    Chain,
}

#[derive(Debug, PartialEq, Eq, Hash)]
pub struct QualityUdf {
    name: &'static str,
    filter: &'static str,
    output: Output,
    signature: Signature,
}

impl QualityUdf {
    fn new(name: &'static str, filter: &'static str, output: Output) -> Self {
        let args = if output == Output::Chain { vec![TypeSignature::Any(2)] } else { vec![TypeSignature::Any(1), TypeSignature::Any(2)] };
        Self { name, filter, output, signature: Signature::one_of(args, Volatility::Immutable) }
    }

    /// Every quality function, for registration.
    pub fn all() -> Vec<Arc<ScalarUDF>> {
        let mut v = Vec::new();
        for f in ["gopher_quality", "gopher_repetition", "fineweb_quality", "c4_quality"] {
            v.push(Self::new(f, f, Output::Reason));
        }
        for (name, f) in [
            ("gopher_quality_signals", "gopher_quality"),
            ("gopher_repetition_signals", "gopher_repetition"),
            ("fineweb_quality_signals", "fineweb_quality"),
            ("c4_quality_signals", "c4_quality"),
        ] {
            v.push(Self::new(name, f, Output::Signals));
        }
        v.push(Self::new("c4_filter_lines", "c4_quality", Output::C4Lines));
        v.push(Self::new("quality_chain", "", Output::Chain));
        v.into_iter().map(|u| Arc::new(ScalarUDF::new_from_impl(u))).collect()
    }

    /// The parameters string of the second argument.
    fn params(&self, args: &[ColumnarValue]) -> Result<String> {
        match args.get(1) {
            None => Ok(String::new()),
            Some(ColumnarValue::Scalar(ScalarValue::Boolean(Some(b)))) if self.filter == "c4_quality" => {
                Ok(format!("filter_no_terminal_punct={b}"))
            }
            Some(ColumnarValue::Scalar(ScalarValue::Utf8(Some(s)) | ScalarValue::LargeUtf8(Some(s)) | ScalarValue::Utf8View(Some(s)))) => {
                Ok(s.clone())
            }
            Some(_) => exec_err!(
                "{}: the second argument must be a constant string of parameters{}",
                self.name,
                if self.filter == "c4_quality" { " or a constant BOOLEAN filter_no_terminal_punct" } else { "" }
            ),
        }
    }

    fn signal_fields(&self) -> Fields {
        let names = filter_by_name(self.filter, "").map(|f| f.signal_names()).unwrap_or(&[]);
        names
            .iter()
            .map(|n| Field::new(*n, if n.starts_with("n_") { DataType::Int64 } else { DataType::Float64 }, true))
            .collect()
    }

    fn chain_fields() -> Fields {
        vec![Field::new("filter_reason", DataType::Utf8, true), Field::new("text", DataType::Utf8, true)].into()
    }
}

fn signals_array(fields: Fields, rows: Vec<Option<Vec<f64>>>) -> Result<ArrayRef> {
    let nulls = NullBuffer::from(rows.iter().map(Option::is_some).collect::<Vec<_>>());
    let columns = fields
        .iter()
        .enumerate()
        .map(|(i, f)| -> ArrayRef {
            let values = rows.iter().map(|r| r.as_ref().map(|v| v[i]));
            if f.data_type() == &DataType::Int64 {
                let mut b = Int64Builder::with_capacity(rows.len());
                values.for_each(|v| b.append_option(v.map(|x| x as i64)));
                Arc::new(b.finish())
            } else {
                let mut b = Float64Builder::with_capacity(rows.len());
                values.for_each(|v| b.append_option(v));
                Arc::new(b.finish())
            }
        })
        .collect();
    Ok(Arc::new(StructArray::try_new(fields, columns, Some(nulls))?))
}

impl ScalarUDFImpl for QualityUdf {
    fn name(&self) -> &str {
        self.name
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _: &[DataType]) -> Result<DataType> {
        Ok(match self.output {
            Output::Reason | Output::C4Lines => DataType::Utf8,
            Output::Signals => DataType::Struct(self.signal_fields()),
            Output::Chain => DataType::Struct(Self::chain_fields()),
        })
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let params = self.params(&args.args)?;
        let texts = args.args[0].to_array(args.number_rows)?;
        let out: ArrayRef = match self.output {
            Output::Reason => {
                let f = filter_by_name(self.filter, &params)?;
                let mut b = StringBuilder::new();
                for_each_str(self.name, &texts, |t| {
                    b.append_option(t.and_then(|t| f.check(&Doc::new(t)).reason()));
                    Ok(())
                })?;
                Arc::new(b.finish())
            }
            Output::C4Lines => {
                let f = C4Quality::with_params(&params)?;
                let mut b = StringBuilder::new();
                for_each_str(self.name, &texts, |t| {
                    b.append_option(t.and_then(|t| f.kept_text(t)));
                    Ok(())
                })?;
                Arc::new(b.finish())
            }
            Output::Signals => {
                let f = filter_by_name(self.filter, &params)?;
                let mut rows = Vec::with_capacity(texts.len());
                for_each_str(self.name, &texts, |t| {
                    rows.push(t.map(|t| f.signals(&Doc::new(t))));
                    Ok(())
                })?;
                signals_array(self.signal_fields(), rows)?
            }
            Output::Chain => {
                let chain = Chain::parse(&params)?;
                let (mut reasons, mut kept) = (StringBuilder::new(), StringBuilder::new());
                let mut valid = Vec::with_capacity(texts.len());
                for_each_str(self.name, &texts, |t| {
                    valid.push(t.is_some());
                    let Some(t) = t else {
                        reasons.append_null();
                        kept.append_null();
                        return Ok(());
                    };
                    let o = chain.run(t);
                    reasons.append_option(o.filter_reason());
                    match (&o.dropped, &o.text) {
                        (Some(_), _) => kept.append_null(),
                        (None, Some(rewritten)) => kept.append_value(rewritten),
                        (None, None) => kept.append_value(t),
                    }
                    Ok(())
                })?;
                let columns: Vec<ArrayRef> = vec![Arc::new(reasons.finish()), Arc::new(kept.finish())];
                Arc::new(StructArray::try_new(Self::chain_fields(), columns, Some(NullBuffer::from(valid)))?)
            }
        };
        Ok(ColumnarValue::Array(out))
    }
}

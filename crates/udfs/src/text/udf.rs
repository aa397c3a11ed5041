//! The text functions in SQL: `split_words(text)` -> `List<Utf8>`; `normalize_text(text, form)`,
//! `clean_text(text)`, `mask_pii(text)`, `simplify_text(text)` -> `Utf8`;
//! `detect_language(text)` -> `{lang, iso639_3, score}`. NULL text gives NULL.

use std::sync::Arc;

use datafusion::arrow::array::{ArrayRef, Float64Builder, ListBuilder, StringBuilder, StructArray};
use datafusion::arrow::buffer::NullBuffer;
use datafusion::arrow::datatypes::{DataType, Field, Fields};
use datafusion::common::Result;
use datafusion::logical_expr::{ColumnarValue, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature, Volatility};

use super::clean::{clean_text, mask_pii, normalize_text, simplify_text, Form};
use super::language::detect_language;
use super::words::split_words;
use crate::args::{const_str, for_each_str};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Function {
    SplitWords,
    Normalize,
    Clean,
    MaskPii,
    Simplify,
    DetectLanguage,
}

#[derive(Debug, PartialEq, Eq, Hash)]
pub struct TextUdf {
    name: &'static str,
    function: Function,
    signature: Signature,
}

impl TextUdf {
    fn new(name: &'static str, function: Function, args: usize) -> Self {
        Self { name, function, signature: Signature::string(args, Volatility::Immutable) }
    }

    pub fn all() -> Vec<Arc<ScalarUDF>> {
        [
            Self::new("split_words", Function::SplitWords, 1),
            Self::new("normalize_text", Function::Normalize, 2),
            Self::new("clean_text", Function::Clean, 1),
            Self::new("mask_pii", Function::MaskPii, 1),
            Self::new("simplify_text", Function::Simplify, 1),
            Self::new("detect_language", Function::DetectLanguage, 1),
        ]
        .into_iter()
        .map(|u| Arc::new(ScalarUDF::new_from_impl(u)))
        .collect()
    }

    fn language_fields() -> Fields {
        vec![
            Field::new("lang", DataType::Utf8, true),
            Field::new("iso639_3", DataType::Utf8, true),
            Field::new("score", DataType::Float64, true),
        ]
        .into()
    }

    fn map_strings(&self, texts: &ArrayRef, f: impl Fn(&str) -> String) -> Result<ArrayRef> {
        let mut out = StringBuilder::new();
        for_each_str(self.name, texts, |t| {
            out.append_option(t.map(&f));
            Ok(())
        })?;
        Ok(Arc::new(out.finish()))
    }
}

impl ScalarUDFImpl for TextUdf {
    fn name(&self) -> &str {
        self.name
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _: &[DataType]) -> Result<DataType> {
        Ok(match self.function {
            Function::SplitWords => DataType::List(Arc::new(Field::new_list_field(DataType::Utf8, true))),
            Function::DetectLanguage => DataType::Struct(Self::language_fields()),
            _ => DataType::Utf8,
        })
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let texts = args.args[0].to_array(args.number_rows)?;
        let out: ArrayRef = match self.function {
            Function::SplitWords => {
                let mut out = ListBuilder::new(StringBuilder::new());
                for_each_str(self.name, &texts, |text| {
                    match text {
                        Some(t) => {
                            split_words(t).into_iter().for_each(|w| out.values().append_value(w));
                            out.append(true);
                        }
                        None => out.append_null(),
                    }
                    Ok(())
                })?;
                Arc::new(out.finish())
            }
            Function::Normalize => {
                let form = Form::parse(const_str(self.name, "form", &args.args[1])?)?;
                self.map_strings(&texts, |t| normalize_text(t, form))?
            }
            Function::Clean => self.map_strings(&texts, clean_text)?,
            Function::MaskPii => self.map_strings(&texts, |t| mask_pii(t).into_owned())?,
            Function::Simplify => self.map_strings(&texts, simplify_text)?,
            Function::DetectLanguage => {
                let (mut lang, mut iso3, mut score) = (StringBuilder::new(), StringBuilder::new(), Float64Builder::new());
                let mut valid = Vec::new();
                for_each_str(self.name, &texts, |t| {
                    valid.push(t.is_some());
                    let d = t.and_then(detect_language);
                    lang.append_option(d.as_ref().map(|d| d.lang.as_str()));
                    iso3.append_option(d.as_ref().map(|d| d.iso639_3));
                    score.append_option(d.as_ref().map(|d| d.score));
                    Ok(())
                })?;
                let columns: Vec<ArrayRef> = vec![Arc::new(lang.finish()), Arc::new(iso3.finish()), Arc::new(score.finish())];
                Arc::new(StructArray::try_new(Self::language_fields(), columns, Some(NullBuffer::from(valid)))?)
            }
        };
        Ok(ColumnarValue::Array(out))
    }
}

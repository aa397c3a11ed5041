//! `split_words(text)` -> `List<Utf8>`: the words the quality rules count (see [`super::words`]).

use std::sync::Arc;

use datafusion::arrow::array::{ListBuilder, StringBuilder};
use datafusion::arrow::datatypes::{DataType, Field};
use datafusion::common::Result;
use datafusion::logical_expr::{ColumnarValue, ScalarFunctionArgs, ScalarUDFImpl, Signature, Volatility};

use super::words::split_words;
use crate::args::for_each_str;

#[derive(Debug, PartialEq, Eq, Hash)]
pub struct SplitWords {
    signature: Signature,
}

impl Default for SplitWords {
    fn default() -> Self {
        Self { signature: Signature::string(1, Volatility::Immutable) }
    }
}

impl ScalarUDFImpl for SplitWords {
    fn name(&self) -> &str {
        "split_words"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _: &[DataType]) -> Result<DataType> {
        Ok(DataType::List(Arc::new(Field::new_list_field(DataType::Utf8, true))))
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let texts = args.args[0].to_array(args.number_rows)?;
        let mut out = ListBuilder::new(StringBuilder::new());
        for_each_str(self.name(), &texts, |text| {
            match text {
                Some(t) => {
                    split_words(t).into_iter().for_each(|w| out.values().append_value(w));
                    out.append(true);
                }
                None => out.append_null(),
            }
            Ok(())
        })?;
        Ok(ColumnarValue::Array(Arc::new(out.finish())))
    }
}

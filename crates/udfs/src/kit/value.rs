//! What a text function returns for one row, and how a column of such values is built. The
//! builders append as rows arrive, so a function never holds a batch of owned results.

use std::ops::Range;
use std::sync::Arc;

use datafusion::arrow::array::{
    ArrayRef, BooleanBuilder, FixedSizeBinaryBuilder, Float32Builder, Float64Builder, Int64Builder, ListBuilder, StringBuilder, StructArray, StructBuilder, UInt32Builder, UInt64Builder,
};
use datafusion::arrow::buffer::NullBuffer;
use datafusion::arrow::datatypes::{DataType, Field, Fields};
use datafusion::common::{exec_err, Result};

/// A per-row result type of a `&str -> T` function.
pub trait Value: Sized + Send + Sync + 'static {
    /// The column being built.
    type Builder;
    /// The Arrow type of the column; `None` for [`Row`], whose fields the function names.
    fn data_type() -> Option<DataType>;
    /// A builder for `rows` rows of `data_type` (the function's declared type).
    fn builder(rows: usize, data_type: &DataType) -> Result<Self::Builder>;
    /// Appends one row's value (`None`: NULL); `input` is the row's text, which [`Substrings`]
    /// and [`Cell::Input`] refer to.
    fn append(b: &mut Self::Builder, v: Option<Self>, input: &str);
    /// The built column.
    fn finish(b: Self::Builder) -> Result<ArrayRef>;
}

/// `Value` for a type whose builder appends `Option<Self>` directly.
macro_rules! direct {
    ($t:ty, $builder:ty, $dt:expr, |$rows:ident| $new:expr) => {
        impl Value for $t {
            type Builder = $builder;
            fn data_type() -> Option<DataType> {
                Some($dt)
            }
            fn builder($rows: usize, _: &DataType) -> Result<Self::Builder> {
                Ok($new)
            }
            fn append(b: &mut Self::Builder, v: Option<Self>, _: &str) {
                b.append_option(v)
            }
            fn finish(mut b: Self::Builder) -> Result<ArrayRef> {
                Ok(Arc::new(b.finish()))
            }
        }
    };
}

direct!(i64, Int64Builder, DataType::Int64, |rows| Int64Builder::with_capacity(rows));
direct!(f64, Float64Builder, DataType::Float64, |rows| Float64Builder::with_capacity(rows));
direct!(bool, BooleanBuilder, DataType::Boolean, |rows| BooleanBuilder::with_capacity(rows));
direct!(String, StringBuilder, DataType::Utf8, |rows| StringBuilder::with_capacity(rows, rows * 64));
// A fixed string, such as a filter's reason: no allocation per row.
direct!(&'static str, StringBuilder, DataType::Utf8, |rows| StringBuilder::with_capacity(rows, rows * 16));

/// `Value` for a type built as `List<Utf8>`; `$append` appends one non-NULL row's strings.
macro_rules! string_list {
    ($t:ty, |$b:ident, $v:ident, $input:ident| $append:expr) => {
        impl Value for $t {
            type Builder = ListBuilder<StringBuilder>;
            fn data_type() -> Option<DataType> {
                Some(DataType::List(Arc::new(Field::new_list_field(DataType::Utf8, true))))
            }
            fn builder(rows: usize, _: &DataType) -> Result<Self::Builder> {
                Ok(ListBuilder::with_capacity(StringBuilder::new(), rows))
            }
            fn append($b: &mut Self::Builder, v: Option<Self>, $input: &str) {
                match v {
                    Some($v) => {
                        $append;
                        $b.append(true);
                    }
                    None => $b.append_null(),
                }
            }
            fn finish(mut b: Self::Builder) -> Result<ArrayRef> {
                Ok(Arc::new(b.finish()))
            }
        }
    };
}

string_list!(Vec<String>, |b, v, _input| v.into_iter().for_each(|s| b.values().append_value(s)));

/// Parts of the input text (`List<Utf8>`), given as byte ranges so that a core returning
/// `Vec<&str>` of its input needs no copy per part.
pub struct Substrings(pub Vec<Range<usize>>);

impl Substrings {
    /// The ranges of `parts`, each a slice of `text`.
    pub fn of(text: &str, parts: &[&str]) -> Self {
        let base = text.as_ptr() as usize;
        Self(parts.iter().map(|p| p.as_ptr() as usize - base..p.as_ptr() as usize - base + p.len()).collect())
    }
}

string_list!(Substrings, |b, v, input| v.0.into_iter().for_each(|r| b.values().append_value(&input[r])));

/// One field of a [`Row`].
pub enum Cell {
    /// A string made for this row.
    Str(Option<String>),
    /// A fixed string.
    Static(Option<&'static str>),
    /// The row's input text, unchanged (no copy until the column is built).
    Input,
    /// A number; stored as Int64 when the field is Int64 (signals named `n_*`).
    F64(Option<f64>),
}

/// A struct value, its fields in the order of the function's declared fields.
pub struct Row(pub Vec<Cell>);

/// The columns of a struct being built.
pub struct RowBuilder {
    fields: Fields,
    columns: Vec<Column>,
    valid: Vec<bool>,
}

enum Column {
    Str(StringBuilder),
    F64(Float64Builder),
    I64(Int64Builder),
}

impl Value for Row {
    type Builder = RowBuilder;
    fn data_type() -> Option<DataType> {
        None
    }
    fn builder(rows: usize, data_type: &DataType) -> Result<Self::Builder> {
        let DataType::Struct(fields) = data_type else { return exec_err!("a Row needs a struct type, got {data_type}") };
        let columns = fields
            .iter()
            .map(|f| match f.data_type() {
                DataType::Utf8 => Ok(Column::Str(StringBuilder::with_capacity(rows, rows * 16))),
                DataType::Float64 => Ok(Column::F64(Float64Builder::with_capacity(rows))),
                DataType::Int64 => Ok(Column::I64(Int64Builder::with_capacity(rows))),
                other => exec_err!("a Row field cannot be {other}"),
            })
            .collect::<Result<_>>()?;
        Ok(RowBuilder { fields: fields.clone(), columns, valid: Vec::with_capacity(rows) })
    }
    fn append(b: &mut Self::Builder, v: Option<Self>, input: &str) {
        b.valid.push(v.is_some());
        let mut cells = v.map(|r| r.0.into_iter());
        for column in &mut b.columns {
            let cell = cells.as_mut().and_then(Iterator::next);
            match (column, cell) {
                (Column::Str(c), Some(Cell::Str(s))) => c.append_option(s),
                (Column::Str(c), Some(Cell::Static(s))) => c.append_option(s),
                (Column::Str(c), Some(Cell::Input)) => c.append_value(input),
                (Column::F64(c), Some(Cell::F64(x))) => c.append_option(x),
                (Column::I64(c), Some(Cell::F64(x))) => c.append_option(x.map(|x| x as i64)),
                (Column::Str(c), _) => c.append_null(),
                (Column::F64(c), _) => c.append_null(),
                (Column::I64(c), _) => c.append_null(),
            }
        }
    }
    fn finish(b: Self::Builder) -> Result<ArrayRef> {
        let columns: Vec<ArrayRef> = b
            .columns
            .into_iter()
            .map(|c| -> ArrayRef {
                match c {
                    Column::Str(mut c) => Arc::new(c.finish()),
                    Column::F64(mut c) => Arc::new(c.finish()),
                    Column::I64(mut c) => Arc::new(c.finish()),
                }
            })
            .collect();
        Ok(Arc::new(StructArray::try_new(b.fields, columns, Some(NullBuffer::from(b.valid)))?))
    }
}

/// A 128-bit hash (`FixedSizeBinary(16)`).
impl Value for [u8; 16] {
    type Builder = FixedSizeBinaryBuilder;
    fn data_type() -> Option<DataType> {
        Some(DataType::FixedSizeBinary(16))
    }
    fn builder(rows: usize, _: &DataType) -> Result<Self::Builder> {
        Ok(FixedSizeBinaryBuilder::with_capacity(rows, 16))
    }
    fn append(b: &mut Self::Builder, v: Option<Self>, _: &str) {
        match v {
            // The width is the builder's own, so appending 16 bytes cannot fail.
            Some(v) => b.append_value(v).unwrap_or_default(),
            None => b.append_null(),
        }
    }
    fn finish(mut b: Self::Builder) -> Result<ArrayRef> {
        Ok(Arc::new(b.finish()))
    }
}

/// `Value` for a list of numbers built as `List<$dt>`.
macro_rules! number_list {
    ($t:ty, $builder:ty, $dt:expr) => {
        impl Value for Vec<$t> {
            type Builder = ListBuilder<$builder>;
            fn data_type() -> Option<DataType> {
                Some(DataType::List(Arc::new(Field::new_list_field($dt, true))))
            }
            fn builder(rows: usize, _: &DataType) -> Result<Self::Builder> {
                Ok(ListBuilder::with_capacity(<$builder>::new(), rows))
            }
            fn append(b: &mut Self::Builder, v: Option<Self>, _: &str) {
                match v {
                    Some(v) => {
                        b.values().append_slice(&v);
                        b.append(true);
                    }
                    None => b.append_null(),
                }
            }
            fn finish(mut b: Self::Builder) -> Result<ArrayRef> {
                Ok(Arc::new(b.finish()))
            }
        }
    };
}

// A MinHash signature or n-gram hashes.
number_list!(u64, UInt64Builder, DataType::UInt64);
// A model's logits or embedding.
number_list!(f32, Float32Builder, DataType::Float32);

/// Labels with scores, best first (`List<Struct<label: Utf8, score: Float64>>`), such as a
/// classifier's top-k predictions.
pub struct Scores(pub Vec<(Arc<str>, f64)>);

impl Scores {
    /// The struct of one element.
    pub fn fields() -> Fields {
        Fields::from(vec![Field::new("label", DataType::Utf8, false), Field::new("score", DataType::Float64, false)])
    }
}

impl Value for Scores {
    type Builder = ListBuilder<StructBuilder>;
    fn data_type() -> Option<DataType> {
        Some(DataType::List(Arc::new(Field::new_list_field(DataType::Struct(Self::fields()), false))))
    }
    fn builder(rows: usize, _: &DataType) -> Result<Self::Builder> {
        let item = StructBuilder::from_fields(Self::fields(), rows);
        Ok(ListBuilder::with_capacity(item, rows).with_field(Arc::new(Field::new_list_field(DataType::Struct(Self::fields()), false))))
    }
    fn append(b: &mut Self::Builder, v: Option<Self>, _: &str) {
        let Some(Scores(scores)) = v else { return b.append_null() };
        let item = b.values();
        for (label, score) in scores {
            // The field builders are the ones `fields()` declares, so they are found.
            if let Some(l) = item.field_builder::<StringBuilder>(0) {
                l.append_value(&*label);
            }
            if let Some(s) = item.field_builder::<Float64Builder>(1) {
                s.append_value(score);
            }
            item.append(true);
        }
        b.append(true);
    }
    fn finish(mut b: Self::Builder) -> Result<ArrayRef> {
        Ok(Arc::new(b.finish()))
    }
}

/// Hashed spans of a document with the index of each one's first sentence
/// (`List<Struct<hash: UInt64, start: UInt32>>`), from `span_hashes`.
pub struct SpanHashes(pub Vec<(u64, u32)>);

impl SpanHashes {
    fn item() -> Field {
        let fields = Fields::from(vec![Field::new("hash", DataType::UInt64, false), Field::new("start", DataType::UInt32, false)]);
        Field::new_list_field(DataType::Struct(fields), false)
    }
}

impl Value for SpanHashes {
    type Builder = ListBuilder<StructBuilder>;
    fn data_type() -> Option<DataType> {
        Some(DataType::List(Arc::new(Self::item())))
    }
    fn builder(rows: usize, _: &DataType) -> Result<Self::Builder> {
        let DataType::Struct(fields) = Self::item().data_type().clone() else { return exec_err!("span_hashes: struct expected") };
        Ok(ListBuilder::with_capacity(StructBuilder::from_fields(fields, rows * 16), rows).with_field(Arc::new(Self::item())))
    }
    fn append(b: &mut Self::Builder, v: Option<Self>, _: &str) {
        let Some(SpanHashes(spans)) = v else { return b.append_null() };
        let item = b.values();
        for (hash, start) in spans {
            // The field builders are the ones `item()` declares, so they are found.
            if let Some(h) = item.field_builder::<UInt64Builder>(0) {
                h.append_value(hash);
            }
            if let Some(s) = item.field_builder::<UInt32Builder>(1) {
                s.append_value(start);
            }
            item.append(true);
        }
        b.append(true);
    }
    fn finish(mut b: Self::Builder) -> Result<ArrayRef> {
        Ok(Arc::new(b.finish()))
    }
}

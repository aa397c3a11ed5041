//! Dictionary encoding only where it pays. A Parquet writer tries a dictionary for every column
//! and, per row group, falls back to plain pages once the dictionary outgrows its page (1 MiB).
//! On a column of unique values (`id`, `_row`, band hashes, texts) each row group so hashes its
//! first megabyte of values into a dictionary that is then thrown away, and still writes the
//! dictionary page: MinHash's signature file was 27% larger and its run 2-4% slower for it. The
//! first slice of a file ([`super::part::WRITE_ROWS`] rows, the same rows whatever the batches)
//! decides instead: a column whose sampled values are mostly distinct is written plain.

use std::collections::HashSet;
use std::hash::Hash;

use datafusion::arrow::array::{Array, AsArray, OffsetSizeTrait, RecordBatch};
use datafusion::arrow::datatypes::DataType;
use datafusion::parquet::file::properties::WriterProperties;
use datafusion::parquet::schema::types::ColumnPath;

/// Values sampled per column, from the start of the first slice.
const SAMPLE: usize = 4096;
/// Fewer values than this decide nothing: the writer's default (a dictionary) stays.
const MIN_SAMPLE: usize = 64;
/// A column is written plain when more than this share of its sampled values are distinct.
const DISTINCT: f64 = 0.5;

/// `props` with the dictionary turned off for every leaf column of `first` whose values are
/// mostly distinct.
pub fn where_it_pays(props: WriterProperties, first: &RecordBatch) -> WriterProperties {
    let mut plain = Vec::new();
    for (field, column) in first.schema().fields().iter().zip(first.columns()) {
        unique_leaves(vec![field.name().clone()], column.as_ref(), &mut plain);
    }
    if plain.is_empty() {
        return props;
    }
    plain.into_iter().fold(props.into_builder(), |b, path| b.set_column_dictionary_enabled(path, false)).build()
}

/// The Parquet paths under `path` whose values in `a` are mostly distinct. A list's leaf is
/// `name.list.<item name>`, as the Arrow writer names it.
fn unique_leaves(path: Vec<String>, a: &dyn Array, out: &mut Vec<ColumnPath>) {
    let child = |name: &str| path.iter().cloned().chain(["list".to_string(), name.to_string()]).collect::<Vec<_>>();
    match a.data_type() {
        DataType::List(f) => unique_leaves(child(f.name()), list_values::<i32>(a).as_ref(), out),
        DataType::LargeList(f) => unique_leaves(child(f.name()), list_values::<i64>(a).as_ref(), out),
        DataType::Struct(fields) => {
            for (f, c) in fields.iter().zip(a.as_struct().columns()) {
                unique_leaves(path.iter().cloned().chain([f.name().clone()]).collect(), c.as_ref(), out);
            }
        }
        _ if mostly_distinct(a) => out.push(ColumnPath::new(path)),
        _ => {}
    }
}

/// The values a (possibly sliced) list array's rows hold.
fn list_values<O: OffsetSizeTrait>(a: &dyn Array) -> std::sync::Arc<dyn Array> {
    let list = a.as_list::<O>();
    let offsets = list.value_offsets();
    let (start, end) = (offsets[0].as_usize(), offsets[offsets.len() - 1].as_usize());
    list.values().slice(start, end - start)
}

/// Whether more than [`DISTINCT`] of the first [`SAMPLE`] non-null values differ. Types without
/// a dictionary in Parquet (booleans) and nested ones not handled here say no.
fn mostly_distinct(a: &dyn Array) -> bool {
    let a = a.slice(0, a.len().min(SAMPLE));
    let (distinct, counted) = match a.data_type() {
        DataType::Utf8 => count(a.as_string::<i32>().iter().flatten()),
        DataType::LargeUtf8 => count(a.as_string::<i64>().iter().flatten()),
        DataType::Utf8View => count(a.as_string_view().iter().flatten()),
        DataType::Binary => count(a.as_binary::<i32>().iter().flatten()),
        DataType::LargeBinary => count(a.as_binary::<i64>().iter().flatten()),
        DataType::BinaryView => count(a.as_binary_view().iter().flatten()),
        DataType::Boolean | DataType::Null => return false,
        t => match t.primitive_width() {
            Some(width) => {
                let data = a.to_data();
                let Some(values) = data.buffers().first() else { return false };
                let bytes = values.as_slice().get(data.offset() * width..(data.offset() + a.len()) * width).unwrap_or(&[]);
                count(bytes.chunks_exact(width).enumerate().filter(|(i, _)| a.is_valid(*i)).map(|(_, v)| v))
            }
            None => return false,
        },
    };
    counted >= MIN_SAMPLE && distinct as f64 > DISTINCT * counted as f64
}

/// (distinct values, values).
fn count<T: Hash + Eq>(values: impl Iterator<Item = T>) -> (usize, usize) {
    let mut seen = HashSet::with_capacity(SAMPLE);
    let mut n = 0;
    for v in values {
        seen.insert(v);
        n += 1;
    }
    (seen.len(), n)
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::arrow::array::{ArrayRef, Int64Array, ListArray, StringArray, StructArray, UInt64Array};
    use datafusion::arrow::datatypes::{Field, Fields, UInt64Type};
    use std::sync::Arc;

    fn dictionary(props: &WriterProperties, path: &[&str]) -> bool {
        props.dictionary_enabled(&ColumnPath::new(path.iter().map(|s| s.to_string()).collect()))
    }

    #[test]
    fn unique_columns_are_written_plain_and_repeated_ones_keep_their_dictionary() {
        let n = 1000;
        let rows: ArrayRef = Arc::new(Int64Array::from_iter_values(0..n));
        let source: ArrayRef = Arc::new(StringArray::from_iter_values((0..n).map(|i| format!("file-{}", i % 3))));
        let ids: ArrayRef = Arc::new(StringArray::from_iter_values((0..n).map(|i| format!("doc-{i}"))));
        let bands: ArrayRef = Arc::new(ListArray::from_iter_primitive::<UInt64Type, _, _>(
            (0..n as u64).map(|i| Some((0..14).map(move |b| Some(i * 14 + b)))),
        ));
        let lengths: ArrayRef = Arc::new(ListArray::from_iter_primitive::<UInt64Type, _, _>((0..n).map(|i| Some([Some(i as u64 % 7)]))));
        let meta: ArrayRef = Arc::new(StructArray::new(
            Fields::from(vec![Field::new("url", DataType::Utf8, false), Field::new("lang", DataType::Utf8, false)]),
            vec![
                Arc::new(StringArray::from_iter_values((0..n).map(|i| format!("https://x/{i}")))),
                Arc::new(StringArray::from_iter_values((0..n).map(|i| if i % 2 == 0 { "en" } else { "de" }))),
            ],
            None,
        ));
        let batch = RecordBatch::try_from_iter([
            ("_row", rows),
            ("_source", source),
            ("id", ids),
            ("bands", bands),
            ("lengths", lengths),
            ("meta", meta),
        ])
        .unwrap();
        let props = where_it_pays(WriterProperties::default(), &batch);
        assert!(!dictionary(&props, &["_row"]) && !dictionary(&props, &["id"]) && !dictionary(&props, &["bands", "list", "item"]));
        assert!(!dictionary(&props, &["meta", "url"]));
        assert!(dictionary(&props, &["_source"]) && dictionary(&props, &["lengths", "list", "item"]) && dictionary(&props, &["meta", "lang"]));
    }

    #[test]
    fn a_small_first_slice_decides_nothing() {
        let batch = RecordBatch::try_from_iter([("_row", Arc::new(Int64Array::from_iter_values(0..10)) as ArrayRef)]).unwrap();
        assert!(dictionary(&where_it_pays(WriterProperties::default(), &batch), &["_row"]));
    }

    #[test]
    fn a_sliced_list_is_judged_by_its_own_values() {
        // The first 100 rows repeat one value; the list array's hidden tail is unique.
        let values = UInt64Array::from_iter_values((0..5000).map(|i| if i < 100 { 7 } else { i }));
        let list = ListArray::new(
            Arc::new(Field::new("item", DataType::UInt64, false)),
            datafusion::arrow::buffer::OffsetBuffer::from_lengths(std::iter::repeat_n(1, 5000)),
            Arc::new(values),
            None,
        );
        let batch = RecordBatch::try_from_iter([("ids", Arc::new(list.slice(0, 100)) as ArrayRef)]).unwrap();
        assert!(dictionary(&where_it_pays(WriterProperties::default(), &batch), &["ids", "list", "item"]));
    }
}

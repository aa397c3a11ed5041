//! One table schema from the files of a read: columns merged by name, in the order they first
//! appear. A column missing from a file is NULL in its rows; a column with two types is an error
//! that names both files. (Taking the first file's schema silently turned the columns only later
//! files have into NULL.)

use std::collections::HashMap;
use std::sync::Arc;

use datafusion::arrow::array::{new_null_array, ArrayRef, RecordBatch};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use tokq_core::error::{Result, TokqError};

/// Merges the schemas of `files` (URI, schema), in order.
pub fn merge(files: &[(String, Schema)]) -> Result<Schema> {
    let mut fields: Vec<Field> = Vec::new();
    let mut first_file: HashMap<String, &str> = HashMap::new();
    for (i, (uri, schema)) in files.iter().enumerate() {
        for field in schema.fields() {
            let Some(at) = fields.iter().position(|f| f.name() == field.name()) else {
                first_file.insert(field.name().clone(), uri);
                // A column the files before lack is NULL in their rows.
                fields.push(field.as_ref().clone().with_nullable(field.is_nullable() || i > 0));
                continue;
            };
            let merged = widen(&fields[at], field).ok_or_else(|| TokqError::SchemaConflict {
                column: field.name().clone(),
                first_type: fields[at].data_type().to_string(),
                first_file: first_file[field.name()].to_string(),
                other_type: field.data_type().to_string(),
                other_file: uri.clone(),
            })?;
            fields[at] = merged;
        }
        // Columns this file lacks are NULL in its rows.
        for f in fields.iter_mut().filter(|f| schema.field_with_name(f.name()).is_err()) {
            *f = f.clone().with_nullable(true);
        }
    }
    Ok(Schema::new(fields))
}

/// One field for two files' versions of a column: equal types, structs merged by field name,
/// or integers widened to floats (as JSON inference does within one file).
fn widen(a: &Field, b: &Field) -> Option<Field> {
    let nullable = a.is_nullable() || b.is_nullable();
    if a.data_type() == b.data_type() {
        return Some(a.clone().with_nullable(nullable));
    }
    match (a.data_type(), b.data_type()) {
        (DataType::Struct(_), DataType::Struct(_)) => {
            let mut merged = a.clone();
            merged.try_merge(b).ok()?;
            Some(merged.with_nullable(nullable))
        }
        (DataType::Int64, DataType::Float64) | (DataType::Float64, DataType::Int64) => {
            Some(a.clone().with_data_type(DataType::Float64).with_nullable(nullable))
        }
        _ => None,
    }
}

/// A batch of one file in the merged schema: columns by name, cast where the merge widened them,
/// NULL where the file lacks them.
pub fn conform(batch: &RecordBatch, schema: &SchemaRef) -> datafusion::error::Result<RecordBatch> {
    let columns = schema
        .fields()
        .iter()
        .map(|f| match batch.column_by_name(f.name()) {
            Some(c) if c.data_type() == f.data_type() => Ok(Arc::clone(c)),
            Some(c) => Ok(cast(c, f.data_type())?),
            None => Ok(new_null_array(f.data_type(), batch.num_rows())),
        })
        .collect::<datafusion::error::Result<Vec<ArrayRef>>>()?;
    Ok(RecordBatch::try_new(Arc::clone(schema), columns)?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::arrow::array::{Float64Array, Int64Array};
    use datafusion::arrow::datatypes::Fields;

    fn schema(fields: Vec<Field>) -> Schema {
        Schema::new(fields)
    }

    #[test]
    fn columns_merge_by_name_and_missing_ones_become_nullable() {
        let title = Field::new("title", DataType::Utf8, true);
        let a = schema(vec![Field::new("id", DataType::Utf8, false), Field::new("meta", DataType::Struct(Fields::from(vec![Field::new("date", DataType::Utf8, true)])), true)]);
        let b = schema(vec![
            Field::new("id", DataType::Utf8, false),
            Field::new("meta", DataType::Struct(Fields::from(vec![title.clone()])), true),
            Field::new("url", DataType::Utf8, false),
        ]);
        let m = merge(&[("a".into(), a), ("b".into(), b)]).unwrap();
        let names: Vec<_> = m.fields().iter().map(|f| f.name().as_str()).collect();
        assert_eq!(names, ["id", "meta", "url"]);
        assert!(!m.field(0).is_nullable(), "in every file and never null");
        assert!(m.field(2).is_nullable(), "url is NULL in a's rows");
        let DataType::Struct(inner) = m.field(1).data_type() else { panic!() };
        assert_eq!(inner.iter().map(|f| f.name().as_str()).collect::<Vec<_>>(), ["date", "title"]);
    }

    #[test]
    fn a_type_conflict_names_both_files_and_integers_widen_to_floats() {
        let a = schema(vec![Field::new("n", DataType::Int64, true), Field::new("s", DataType::Utf8, true)]);
        let b = schema(vec![Field::new("n", DataType::Float64, true), Field::new("s", DataType::Int64, true)]);
        let e = merge(&[("file://a.jsonl".into(), a.clone()), ("file://b.jsonl".into(), b)]).unwrap_err();
        assert_eq!(e.to_string(), "column 's' is Utf8 in file://a.jsonl and Int64 in file://b.jsonl: give it one type in every file, or read them with separate read_* calls");
        let c = schema(vec![Field::new("n", DataType::Float64, true)]);
        let m = merge(&[("a".into(), a), ("c".into(), c)]).unwrap();
        assert_eq!(m.field(0).data_type(), &DataType::Float64);
        assert!(m.field(1).is_nullable());
    }

    #[test]
    fn a_batch_conforms_by_name_with_casts_and_nulls() {
        let target: SchemaRef = Arc::new(schema(vec![Field::new("x", DataType::Utf8, true), Field::new("n", DataType::Float64, true)]));
        let file = Arc::new(schema(vec![Field::new("n", DataType::Int64, true)]));
        let batch = RecordBatch::try_new(file, vec![Arc::new(Int64Array::from(vec![1, 2]))]).unwrap();
        let out = conform(&batch, &target).unwrap();
        assert_eq!(out.column(0).null_count(), 2);
        assert_eq!(out.column(1).as_any().downcast_ref::<Float64Array>().unwrap().values(), &[1.0, 2.0]);
    }
}

//! Where a statement's result rows go ([`ResultSink`]: the engine prints nothing; the CLI prints
//! them, Python keeps them), and the text formats a face can render them in: a table (as
//! datafusion-cli prints it), CSV with a header, a JSON array of objects, or one JSON object per
//! line.

use std::sync::Arc;

use datafusion::arrow::array::RecordBatch;
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::arrow::csv::WriterBuilder;
use datafusion::arrow::json::{ArrayWriter, LineDelimitedWriter};
use datafusion::arrow::util::pretty::pretty_format_batches;
use datafusion::error::Result;

/// Takes the result rows of the statements that have them (a query, EXPLAIN, DESCRIBE, SHOW),
/// in statement order.
pub trait ResultSink: Send + Sync {
    /// One statement's rows, all of them; `schema` is theirs even when there are none.
    fn rows(&self, schema: &SchemaRef, batches: &[RecordBatch]) -> Result<()>;
}

/// Drops result rows: a caller that runs a recipe for what it writes.
pub struct Discard;

impl ResultSink for Discard {
    fn rows(&self, _: &SchemaRef, _: &[RecordBatch]) -> Result<()> {
        Ok(())
    }
}

/// The format of printed results.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum ResultFormat {
    /// A boxed table.
    #[default]
    Table,
    /// CSV with a header line.
    Csv,
    /// One JSON array of objects.
    Json,
    /// One JSON object per line.
    Ndjson,
}

impl ResultFormat {
    /// The batches as text in this format, ending with a line break.
    pub fn render(self, schema: &SchemaRef, batches: &[RecordBatch]) -> Result<String> {
        // No rows still prints the columns: a table's header, CSV's header line.
        let empty;
        let batches = if batches.is_empty() {
            empty = [RecordBatch::new_empty(Arc::clone(schema))];
            &empty[..]
        } else {
            batches
        };
        let mut out = Vec::new();
        match self {
            Self::Table => return Ok(format!("{}\n", pretty_format_batches(batches)?)),
            Self::Csv => {
                let mut w = WriterBuilder::new().with_header(true).build(&mut out);
                for b in batches {
                    w.write(b)?;
                }
            }
            Self::Json => {
                let mut w = ArrayWriter::new(&mut out);
                w.write_batches(&batches.iter().collect::<Vec<_>>())?;
                w.finish()?;
                out.push(b'\n');
            }
            Self::Ndjson => {
                let mut w = LineDelimitedWriter::new(&mut out);
                w.write_batches(&batches.iter().collect::<Vec<_>>())?;
                w.finish()?;
            }
        }
        Ok(String::from_utf8_lossy(&out).into_owned())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::prelude::SessionContext;

    #[tokio::test]
    async fn each_format_prints_the_rows() {
        let ctx = SessionContext::new();
        let df = ctx.sql("SELECT * FROM (VALUES (1, 'a,b'), (2, NULL)) AS t(n, s)").await.unwrap();
        let schema: SchemaRef = Arc::new(df.schema().as_arrow().clone());
        let batches = df.collect().await.unwrap();
        assert_eq!(ResultFormat::Csv.render(&schema, &batches).unwrap(), "n,s\n1,\"a,b\"\n2,\n");
        assert_eq!(ResultFormat::Ndjson.render(&schema, &batches).unwrap(), "{\"n\":1,\"s\":\"a,b\"}\n{\"n\":2}\n");
        assert_eq!(ResultFormat::Json.render(&schema, &batches).unwrap(), "[{\"n\":1,\"s\":\"a,b\"},{\"n\":2}]\n");
        assert!(ResultFormat::Table.render(&schema, &batches).unwrap().contains("| 1 | a,b |"));
        // No rows: the header still, as `LIMIT 0` in other SQL shells.
        assert_eq!(ResultFormat::Csv.render(&schema, &[]).unwrap(), "n,s\n");
        assert!(ResultFormat::Table.render(&schema, &[]).unwrap().contains("| n | s |"));
    }
}

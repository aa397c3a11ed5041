//! `read_warc` and `read_wet`: WARC records as rows. A WARC row is one record of the selected
//! types (`response` by default) with its HTTP payload decoded; a WET row is one `conversion`
//! record's text. Every row carries `_offset`, the byte offset of its record in the file as
//! stored, next to the lineage columns `_source` and `_row` (the record's index in the file).

use std::sync::Arc;

use datafusion::arrow::array::{ArrayRef, BinaryBuilder, Int32Builder, Int64Builder, StringBuilder, TimestampMicrosecondBuilder};
use datafusion::arrow::compute::kernels::cast_utils::string_to_timestamp_nanos;
use datafusion::arrow::datatypes::{DataType, Field, Schema, SchemaRef, TimeUnit};
use datafusion::arrow::record_batch::RecordBatch;
use serde::{Deserialize, Serialize};
use tokq_core::web::http::Message;
use tokq_core::web::warc::Header;
use tokq_core::TokqError;

use super::warc_records::Record;
use super::BATCH_BYTES;

/// The column that holds a record's byte offset in its file.
pub const OFFSET_COLUMN: &str = "_offset";

/// The WARC record types, as the bits of a selection.
const TYPES: &[&str] = &["warcinfo", "response", "resource", "request", "metadata", "revisit", "conversion", "continuation"];

/// Which records a WARC read keeps.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct RecordTypes(u16);

impl RecordTypes {
    /// `response` records: the pages of a crawl.
    pub const RESPONSE: Self = Self(1 << 1);

    /// Parses `response|resource` (or `*` for every type).
    pub fn parse(spec: &str) -> Result<Self, TokqError> {
        let mut bits = 0u16;
        for name in spec.split('|').map(str::trim) {
            if name == "*" {
                bits = u16::MAX;
                continue;
            }
            let i = TYPES.iter().position(|t| t.eq_ignore_ascii_case(name)).ok_or_else(|| TokqError::Argument {
                function: "read_warc",
                cause: format!("unknown record type '{name}' (known: {}, or * for all)", TYPES.join(", ")),
            })?;
            bits |= 1 << i;
        }
        Ok(Self(bits))
    }

    fn keeps(self, record_type: &str) -> bool {
        TYPES.iter().position(|t| *t == record_type).map_or(self.0 == u16::MAX, |i| self.0 & (1 << i) != 0)
    }
}

/// What rows a WARC file gives.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum WarcRows {
    /// `read_warc`: records of these types with their decoded payloads.
    Records(RecordTypes),
    /// `read_wet`: `conversion` records as text.
    Text,
}

fn timestamp() -> DataType {
    DataType::Timestamp(TimeUnit::Microsecond, Some("UTC".into()))
}

impl WarcRows {
    pub fn schema(self) -> Schema {
        let text = |name: &str| Field::new(name, DataType::Utf8, true);
        let mut fields = vec![text("url"), text("warc_record_id"), Field::new("warc_date", timestamp(), true)];
        match self {
            WarcRows::Records(_) => fields.extend([
                text("warc_type"),
                Field::new("http_status", DataType::Int32, true),
                text("content_type"),
                Field::new("content", DataType::Binary, true),
            ]),
            WarcRows::Text => fields.extend([text("languages"), text("text")]),
        }
        fields.push(Field::new(OFFSET_COLUMN, DataType::Int64, false));
        Schema::new(fields)
    }

    /// Whether a record makes a row.
    pub fn keeps(self, header: &Header) -> bool {
        let t = header.record_type();
        match self {
            WarcRows::Records(types) => types.keeps(&t),
            WarcRows::Text => t == "conversion",
        }
    }
}

/// Rows being gathered into a batch.
pub struct Rows {
    kind: WarcRows,
    url: StringBuilder,
    id: StringBuilder,
    date: TimestampMicrosecondBuilder,
    warc_type: StringBuilder,
    status: Int32Builder,
    content_type: StringBuilder,
    content: BinaryBuilder,
    languages: StringBuilder,
    text: StringBuilder,
    offset: Int64Builder,
    pub rows: Vec<i64>,
    bytes: usize,
}

/// A payload column sized for a whole batch up front: growing by doubling would copy it twice
/// over. Untouched capacity costs no memory.
fn batch_content() -> BinaryBuilder {
    BinaryBuilder::with_capacity(1024, BATCH_BYTES + (1 << 20))
}

fn micros(date: &str) -> Option<i64> {
    string_to_timestamp_nanos(date).ok().map(|n| n.div_euclid(1000))
}

impl Rows {
    pub fn new(kind: WarcRows) -> Self {
        Self {
            kind,
            url: StringBuilder::new(),
            id: StringBuilder::new(),
            date: TimestampMicrosecondBuilder::new().with_timezone("UTC"),
            warc_type: StringBuilder::new(),
            status: Int32Builder::new(),
            content_type: StringBuilder::new(),
            content: batch_content(),
            languages: StringBuilder::new(),
            text: StringBuilder::new(),
            offset: Int64Builder::new(),
            rows: Vec::new(),
            bytes: 0,
        }
    }

    /// Whether no row is gathered.
    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    /// Whether the batch should go out before another row is added.
    pub fn full(&self, batch_size: usize) -> bool {
        self.rows.len() >= batch_size || self.bytes >= BATCH_BYTES
    }

    /// Adds a record's row. HTTP records (response, request, revisit of an http(s) URL) give
    /// their status, Content-Type and decoded payload; others their whole block.
    pub fn push(&mut self, r: &Record) {
        let h = &r.header;
        let url = h.target_uri();
        self.url.append_option(url.as_deref());
        self.id.append_option(h.get("WARC-Record-ID"));
        self.date.append_option(h.get("WARC-Date").and_then(micros));
        self.offset.append_value(r.offset as i64);
        self.rows.push(r.index as i64);
        match self.kind {
            WarcRows::Records(_) => {
                let record_type = h.record_type();
                let http = matches!(record_type.as_str(), "response" | "request" | "revisit")
                    && url.as_deref().is_some_and(|u| u.starts_with("http:") || u.starts_with("https:"))
                    && !r.block.is_empty();
                let message = if http { Message::parse(r.block) } else { None };
                self.warc_type.append_value(&record_type);
                match message {
                    Some(m) => {
                        self.status.append_option(m.status.map(i32::from));
                        self.content_type.append_option(m.header("Content-Type"));
                        let payload = m.payload();
                        self.bytes += payload.len();
                        self.content.append_value(&payload);
                    }
                    None => {
                        self.status.append_null();
                        self.content_type.append_option(h.get("Content-Type"));
                        self.bytes += r.block.len();
                        self.content.append_value(r.block);
                    }
                }
            }
            WarcRows::Text => {
                self.languages.append_option(h.get("WARC-Identified-Content-Language"));
                self.bytes += r.block.len();
                self.text.append_value(String::from_utf8_lossy(r.block));
            }
        }
    }

    /// The gathered rows as a batch of `schema`, and their record indices; the builders restart.
    pub fn finish(&mut self, schema: &SchemaRef) -> datafusion::error::Result<(RecordBatch, Vec<i64>)> {
        let head: [ArrayRef; 3] = [Arc::new(self.url.finish()), Arc::new(self.id.finish()), Arc::new(self.date.finish())];
        let mut columns = head.to_vec();
        match self.kind {
            WarcRows::Records(_) => columns.extend([
                Arc::new(self.warc_type.finish()) as ArrayRef,
                Arc::new(self.status.finish()),
                Arc::new(self.content_type.finish()),
                Arc::new(std::mem::replace(&mut self.content, batch_content()).finish()),
            ]),
            WarcRows::Text => columns.extend([Arc::new(self.languages.finish()) as ArrayRef, Arc::new(self.text.finish())]),
        }
        columns.push(Arc::new(self.offset.finish()));
        self.bytes = 0;
        Ok((RecordBatch::try_new(Arc::clone(schema), columns)?, std::mem::take(&mut self.rows)))
    }
}

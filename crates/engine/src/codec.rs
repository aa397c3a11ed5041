//! Plan codecs for Ballista: they carry tokq's lineage table and scan, the packing table and
//! exec, and the output table and sink, between client, scheduler and executors, and hand everything else to the wrapped codec
//! (Ballista's own).
//! Scalar UDFs need no codec: they are stateless and travel by name.

use std::sync::Arc;

use datafusion::arrow::datatypes::{Schema, SchemaRef};
use datafusion::catalog::TableProvider;
use datafusion::common::{internal_err, DataFusionError, Result, TableReference};
use datafusion::execution::TaskContext;
use datafusion::logical_expr::{Extension, LogicalPlan};
use datafusion::physical_plan::ExecutionPlan;
use datafusion_proto::logical_plan::{AsLogicalPlan, LogicalExtensionCodec};
use datafusion_proto::physical_plan::{PhysicalExtensionCodec, PhysicalProtoConverterExtension};
use datafusion_proto::protobuf;
use prost::Message;
use serde::{Deserialize, Serialize};

use crate::lineage::files::FileRef;
use crate::lineage::format::Format;
use crate::lineage::scan::{as_lineage_scan, build, file_groups, LineageSource, ScanConfig};
use crate::lineage::table::LineageTable;
use crate::pack::exec::PackExec;
use crate::pack::table::PackTable;
use tokq_core::pack::PackOptions;
use crate::sink::exec::SinkExec;
use crate::sink::table::SinkTable;
use crate::sink::SinkOptions;

const TABLE_MAGIC: &[u8] = b"tokq.lineage_table.v1:";
const SCAN_MAGIC: &[u8] = b"tokq.lineage_scan.v1:";
const PACK_TABLE_MAGIC: &[u8] = b"tokq.pack_table.v1:";
const PACK_EXEC_MAGIC: &[u8] = b"tokq.pack_exec.v1:";
const SINK_TABLE_MAGIC: &[u8] = b"tokq.sink_table.v1:";
const SINK_EXEC_MAGIC: &[u8] = b"tokq.sink_exec.v1:";

/// A table over a logical plan (packing, output): its options and its input plan in
/// DataFusion's own protobuf form.
#[derive(Serialize, Deserialize)]
struct TableWire<T> {
    opts: T,
    input: Vec<u8>,
}

impl<T> TableWire<T> {
    fn new(opts: T, input: &LogicalPlan, codec: &dyn LogicalExtensionCodec) -> Result<Self> {
        Ok(Self { opts, input: protobuf::LogicalPlanNode::try_from_logical_plan(input, codec)?.encode_to_vec() })
    }

    fn input(&self, ctx: &TaskContext, codec: &dyn LogicalExtensionCodec) -> Result<LogicalPlan> {
        let node = protobuf::LogicalPlanNode::decode(self.input.as_slice()).map_err(|e| DataFusionError::External(Box::new(e)))?;
        node.try_into_logical_plan(ctx, codec)
    }
}

#[derive(Serialize, Deserialize)]
struct ScanWire {
    format: Format,
    location: String,
    file_schema: Vec<u8>,
    skip_bad: bool,
    projection: Option<Vec<usize>>,
    groups: Vec<Vec<FileRef>>,
}

fn encode_schema(schema: &Schema) -> Result<Vec<u8>> {
    Ok(protobuf::Schema::try_from(schema)?.encode_to_vec())
}

fn decode_schema(bytes: &[u8]) -> Result<SchemaRef> {
    let proto = protobuf::Schema::decode(bytes).map_err(|e| DataFusionError::External(Box::new(e)))?;
    Ok(Arc::new(Schema::try_from(&proto)?))
}

fn json<T: Serialize>(magic: &[u8], value: &T, buf: &mut Vec<u8>) -> Result<()> {
    buf.extend_from_slice(magic);
    serde_json::to_writer(buf, value).map_err(|e| DataFusionError::External(Box::new(e)))
}

fn unjson<'a, T: Deserialize<'a>>(bytes: &'a [u8]) -> Result<T> {
    serde_json::from_slice(bytes).map_err(|e| DataFusionError::External(Box::new(e)))
}

#[derive(Debug)]
pub struct TokqLogicalCodec {
    inner: Arc<dyn LogicalExtensionCodec>,
}

impl TokqLogicalCodec {
    pub fn new(inner: Arc<dyn LogicalExtensionCodec>) -> Self {
        Self { inner }
    }
}

impl LogicalExtensionCodec for TokqLogicalCodec {
    fn try_decode(&self, buf: &[u8], inputs: &[LogicalPlan], ctx: &TaskContext) -> Result<Extension> {
        self.inner.try_decode(buf, inputs, ctx)
    }

    fn try_encode(&self, node: &Extension, buf: &mut Vec<u8>) -> Result<()> {
        self.inner.try_encode(node, buf)
    }

    fn try_decode_table_provider(
        &self,
        buf: &[u8],
        table_ref: &TableReference,
        schema: SchemaRef,
        ctx: &TaskContext,
    ) -> Result<Arc<dyn TableProvider>> {
        if let Some(body) = buf.strip_prefix(PACK_TABLE_MAGIC) {
            let w: TableWire<PackOptions> = unjson(body)?;
            return Ok(Arc::new(PackTable::try_new(w.input(ctx, self)?, w.opts)?));
        }
        if let Some(body) = buf.strip_prefix(SINK_TABLE_MAGIC) {
            let w: TableWire<SinkOptions> = unjson(body)?;
            return Ok(Arc::new(SinkTable::try_new(w.input(ctx, self)?, w.opts)?));
        }
        let Some(body) = buf.strip_prefix(TABLE_MAGIC) else {
            return self.inner.try_decode_table_provider(buf, table_ref, schema, ctx);
        };
        let (config, file_schema): (ScanConfig, Vec<u8>) = unjson(body)?;
        Ok(Arc::new(LineageTable::try_new(config, decode_schema(&file_schema)?)?))
    }

    fn try_encode_table_provider(
        &self,
        table_ref: &TableReference,
        node: Arc<dyn TableProvider>,
        buf: &mut Vec<u8>,
    ) -> Result<()> {
        if let Some(t) = node.downcast_ref::<PackTable>() {
            return json(PACK_TABLE_MAGIC, &TableWire::new(t.options(), t.input(), self)?, buf);
        }
        if let Some(t) = node.downcast_ref::<SinkTable>() {
            return json(SINK_TABLE_MAGIC, &TableWire::new(t.options(), t.input(), self)?, buf);
        }
        match node.downcast_ref::<LineageTable>() {
            Some(t) => json(TABLE_MAGIC, &(t.config(), encode_schema(t.file_schema())?), buf),
            None => self.inner.try_encode_table_provider(table_ref, node, buf),
        }
    }

    fn try_decode_file_format(
        &self,
        buf: &[u8],
        ctx: &TaskContext,
    ) -> Result<Arc<dyn datafusion::datasource::file_format::FileFormatFactory>> {
        self.inner.try_decode_file_format(buf, ctx)
    }

    fn try_encode_file_format(
        &self,
        buf: &mut Vec<u8>,
        node: Arc<dyn datafusion::datasource::file_format::FileFormatFactory>,
    ) -> Result<()> {
        self.inner.try_encode_file_format(buf, node)
    }
}

#[derive(Debug)]
pub struct TokqPhysicalCodec {
    inner: Arc<dyn PhysicalExtensionCodec>,
}

impl TokqPhysicalCodec {
    pub fn new(inner: Arc<dyn PhysicalExtensionCodec>) -> Self {
        Self { inner }
    }
}

impl PhysicalExtensionCodec for TokqPhysicalCodec {
    fn try_decode(
        &self,
        buf: &[u8],
        inputs: &[Arc<dyn ExecutionPlan>],
        ctx: &TaskContext,
        pc: &dyn PhysicalProtoConverterExtension,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        if let Some(body) = buf.strip_prefix(PACK_EXEC_MAGIC) {
            let [input] = inputs else {
                return internal_err!("a pack exec takes one input, got {}", inputs.len());
            };
            return Ok(Arc::new(PackExec::try_new(Arc::clone(input), unjson(body)?)?));
        }
        if let Some(body) = buf.strip_prefix(SINK_EXEC_MAGIC) {
            let [input] = inputs else {
                return internal_err!("a sink exec takes one input, got {}", inputs.len());
            };
            return Ok(Arc::new(SinkExec::try_new(Arc::clone(input), unjson(body)?)?));
        }
        let Some(body) = buf.strip_prefix(SCAN_MAGIC) else {
            let plan = self.inner.try_decode(buf, inputs, ctx, pc)?;
            #[cfg(feature = "cluster")]
            let plan = crate::cluster::shuffle::one_location_each(plan);
            return Ok(plan);
        };
        if !inputs.is_empty() {
            return internal_err!("a lineage scan takes no inputs");
        }
        let w: ScanWire = unjson(body)?;
        let source = LineageSource::try_new(w.format, w.location, decode_schema(&w.file_schema)?, w.skip_bad, None)?;
        build(source.with_projection_indices(w.projection), w.groups)
    }

    fn try_encode(
        &self,
        node: Arc<dyn ExecutionPlan>,
        buf: &mut Vec<u8>,
        pc: &dyn PhysicalProtoConverterExtension,
    ) -> Result<()> {
        if let Some(pack) = node.downcast_ref::<PackExec>() {
            return json(PACK_EXEC_MAGIC, pack.options(), buf);
        }
        if let Some(sink) = node.downcast_ref::<SinkExec>() {
            return json(SINK_EXEC_MAGIC, sink.options(), buf);
        }
        let Some((config, source)) = as_lineage_scan(node.as_ref()) else {
            return self.inner.try_encode(node, buf, pc);
        };
        let wire = ScanWire {
            format: source.format,
            location: source.location.clone(),
            file_schema: encode_schema(&source.file_schema)?,
            skip_bad: source.skip_bad,
            projection: source.projection_indices(),
            groups: file_groups(config),
        };
        json(SCAN_MAGIC, &wire, buf)
    }
}

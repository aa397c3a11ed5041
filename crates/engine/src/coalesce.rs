//! Keeps a filter from gathering documents of megabytes into one batch. DataFusion's `FilterExec`
//! copies its small output batches together until they reach `batch_size` rows (8,192); with
//! 2 MB documents that is 16 GB in one batch, and a text column's 32-bit offsets overflow at 2 GB
//! ("Offset overflow error"). tokq's readers already cut batches at
//! [`crate::lineage::BATCH_BYTES`], and tokq's writer gathers rows by rows and bytes, so this
//! rule sets every filter's gathering target to two rows: a batch of more than one row passes
//! through as it is. Exchanges (GROUP BY, joins, sorts) still gather to `batch_size` rows;
//! lower `datafusion.execution.batch_size` for recipes that exchange rows of megabytes.

use std::sync::Arc;

use datafusion::common::config::ConfigOptions;
use datafusion::common::tree_node::{Transformed, TreeNode};
use datafusion::common::Result;
use datafusion::physical_optimizer::PhysicalOptimizerRule;
use datafusion::physical_plan::filter::FilterExec;
use datafusion::physical_plan::ExecutionPlan;

/// A `FilterExec` gathers batches of at most half its batch size; half of two is one row.
const FILTER_BATCH_ROWS: usize = 2;

#[derive(Debug, Default)]
pub struct FiltersPassBatchesThrough;

impl PhysicalOptimizerRule for FiltersPassBatchesThrough {
    fn optimize(&self, plan: Arc<dyn ExecutionPlan>, _: &ConfigOptions) -> Result<Arc<dyn ExecutionPlan>> {
        plan.transform_up(|node| match node.downcast_ref::<FilterExec>() {
            Some(f) if f.batch_size() != FILTER_BATCH_ROWS => Ok(Transformed::yes(Arc::new(f.with_batch_size(FILTER_BATCH_ROWS)?) as Arc<dyn ExecutionPlan>)),
            _ => Ok(Transformed::no(node)),
        })
        .map(|t| t.data)
    }

    fn name(&self) -> &str {
        "filters_pass_batches_through"
    }

    fn schema_check(&self) -> bool {
        true
    }
}

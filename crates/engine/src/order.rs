//! Keeps packing and output files deterministic. DataFusion spreads a partition over several
//! with round-robin repartitioning when it has spare cores, and which rows meet in which
//! partition then depends on timing. Below a `PackExec` or a `SinkExec` this rule removes those
//! repartitions, so that each partition reads its input files in order and the same input gives
//! the same rows and files on any run. The cost: a statement runs at most one task per input
//! file. Exchanges that a query needs (hash repartitions for GROUP BY or joins) stay; an ORDER BY
//! in the packed view makes such inputs deterministic too.

use std::sync::Arc;

use datafusion::common::config::ConfigOptions;
use datafusion::common::tree_node::{Transformed, TreeNode, TreeNodeRecursion};
use datafusion::common::Result;
use datafusion::physical_optimizer::PhysicalOptimizerRule;
use datafusion::physical_plan::repartition::RepartitionExec;
use datafusion::physical_plan::{replace_children_if_necessary, ExecutionPlan, Partitioning};

use crate::pack::exec::PackExec;
use crate::sink::exec::SinkExec;

#[derive(Debug, Default)]
pub struct KeepInputOrder;

fn strip_round_robin(plan: Arc<dyn ExecutionPlan>) -> Result<Transformed<Arc<dyn ExecutionPlan>>> {
    plan.transform_up(|node| match node.downcast_ref::<RepartitionExec>() {
        Some(r) if matches!(r.partitioning(), Partitioning::RoundRobinBatch(_)) => Ok(Transformed::yes(Arc::clone(r.input()))),
        _ => Ok(Transformed::no(node)),
    })
}

impl PhysicalOptimizerRule for KeepInputOrder {
    fn optimize(&self, plan: Arc<dyn ExecutionPlan>, _: &ConfigOptions) -> Result<Arc<dyn ExecutionPlan>> {
        plan.transform_down(|node| {
            if !(node.is::<PackExec>() || node.is::<SinkExec>()) {
                return Ok(Transformed::no(node));
            }
            let children = node.children().into_iter().cloned().collect::<Vec<_>>();
            let mut changed = false;
            let mut stripped = Vec::with_capacity(children.len());
            for c in children {
                let t = strip_round_robin(c)?;
                changed |= t.transformed;
                stripped.push(t.data);
            }
            let node = if changed { replace_children_if_necessary(node, stripped)? } else { node };
            Ok(Transformed::new(node, changed, TreeNodeRecursion::Jump))
        })
        .map(|t| t.data)
    }

    fn name(&self) -> &str {
        "keep_input_order"
    }

    fn schema_check(&self) -> bool {
        true
    }
}

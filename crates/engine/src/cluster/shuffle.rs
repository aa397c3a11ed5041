//! Shuffle inputs read once each. When an executor is lost, Ballista 55's scheduler removes the
//! shuffle outputs that lived on it and runs the stage again, but a stage that was itself rolled
//! back reruns every map task while the outputs its tasks on other executors had already published
//! stay in the consuming stage's inputs (`add_input_partitions` appends; nothing removes them).
//! That stage then lists a map task's file twice and reads its rows twice (the executor-loss
//! chaos test saw 29,664 rows where 19,795 are right). Each file a map task writes for an output
//! partition has one right location, so the reader keeps the last one the scheduler added: the
//! rerun's.

use std::collections::HashMap;
use std::hash::Hash;
use std::sync::Arc;

use ballista_core::execution_plans::ShuffleReaderExec;
use ballista_core::serde::scheduler::PartitionLocation;
use datafusion::physical_plan::ExecutionPlan;

/// `plan` with each of its shuffle reads listing every map task's files once.
pub(crate) fn one_location_each(plan: Arc<dyn ExecutionPlan>) -> Arc<dyn ExecutionPlan> {
    let Some(reader) = plan.downcast_ref::<ShuffleReaderExec>() else { return plan };
    let mut fixed = reader.clone();
    let mut dropped = 0;
    for locations in &mut fixed.partition {
        let n = locations.len();
        // One map task may write an output partition in several files (`file_id`): those are
        // distinct; the same file of the same task twice is the rerun's and an earlier attempt's.
        let file = |l: &PartitionLocation| (l.map_partition_id, l.partition_id.partition_id, l.file_id, l.is_sort_shuffle);
        *locations = last_per_key(std::mem::take(locations), file);
        dropped += n - locations.len();
    }
    if dropped == 0 {
        return plan;
    }
    log::warn!("stage {}: left out {dropped} shuffle location(s) of map tasks the cluster ran again", reader.stage_id);
    Arc::new(fixed)
}

/// The items with the last of each key, in the order those last ones stand.
fn last_per_key<T, K: Eq + Hash>(items: Vec<T>, key: impl Fn(&T) -> K) -> Vec<T> {
    let last: HashMap<K, usize> = items.iter().enumerate().map(|(i, item)| (key(item), i)).collect();
    items.into_iter().enumerate().filter(|(i, item)| last[&key(item)] == *i).map(|(_, item)| item).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_key_keeps_its_last_item_in_place() {
        // (map partition, output partition, attempt): map 0 of output 0 published twice.
        let items = vec![(0, 0, "a0"), (1, 0, "a0"), (0, 1, "a0"), (0, 0, "a1"), (2, 0, "a1")];
        let kept = last_per_key(items, |&(map, out, _)| (map, out));
        assert_eq!(kept, [(1, 0, "a0"), (0, 1, "a0"), (0, 0, "a1"), (2, 0, "a1")]);
        assert_eq!(last_per_key(Vec::<(u8, u8)>::new(), |&(a, _)| a), []);
    }
}

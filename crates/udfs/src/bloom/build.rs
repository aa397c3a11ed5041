//! `bloom_counts`: the counting Bloom filter of a hash column, an aggregate.
//!
//! The partitions of one process fill one filter together ([`SharedBloom`]), so a statement holds
//! one filter per process, not one per partition. The last partition of a process to finish gives
//! the filter as its state, under the filter's id; the others give the id alone, so that the final
//! aggregate knows to wait for that filter, and fails the statement if it never comes (a partition
//! lost) instead of deciding from part of the counts. Filters of different ids (other processes:
//! Ballista tasks) add up, saturating. Every insert of a partition precedes its own finish, and
//! the last finish reads the filter, so the filter given holds every insert.

use std::collections::{HashMap, HashSet};
use std::hash::{BuildHasher, RandomState};
use std::sync::{Arc, LazyLock, Mutex};

use datafusion::arrow::array::{Array, ArrayRef};
use datafusion::arrow::datatypes::{DataType, Field, FieldRef};
use datafusion::common::cast::as_uint64_array;
use datafusion::common::{exec_err, Result, ScalarValue};
use datafusion::logical_expr::expr::AggregateFunction;
use datafusion::logical_expr::function::{AccumulatorArgs, AggregateFunctionSimplification, StateFieldsArgs};
use datafusion::logical_expr::utils::format_state_name;
use datafusion::logical_expr::{Accumulator, AggregateUDF, AggregateUDFImpl, Documentation, Expr, Signature};
use datafusion::physical_expr::expressions::Literal;
use datafusion::physical_expr::PhysicalExpr;
use tokq_core::dedup::bloom::{CountingBloom, SharedBloom};
use tokq_core::TokqError;

use super::{hashes, BUILD, PROBE};
use crate::args::{for_each_bytes, Consts, OrDf};
use crate::kit::{arities, doc};

/// `fpr` and `cap` (arguments 2 and 3), checked by making a filter of one item.
fn parameters(c: &Consts) -> Result<(f64, i64), TokqError> {
    let (fpr, cap) = (c.f64(2, "fpr", 0.01)?, c.i64(3, "cap", 2)?);
    SharedBloom::new(BUILD, 1, fpr, cap)?;
    Ok((fpr, cap))
}

fn damaged(cause: String) -> datafusion::error::DataFusionError {
    crate::args::df(TokqError::Argument { function: BUILD, cause })
}

/// `bloom_counts(hash, items [, fpr, cap])`.
#[derive(Debug, PartialEq, Eq, Hash)]
struct BloomCounts {
    signature: Signature,
}

impl AggregateUDFImpl for BloomCounts {
    fn name(&self) -> &str {
        BUILD
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _: &[DataType]) -> Result<DataType> {
        Ok(DataType::LargeBinary)
    }

    fn accumulator(&self, args: AccumulatorArgs) -> Result<Box<dyn Accumulator>> {
        let literals: Vec<_> = args.exprs.iter().map(|e| e.downcast_ref::<Literal>().map(Literal::value)).collect();
        let (fpr, cap) = parameters(&Consts::at_planning(BUILD, &literals)).df()?;
        Ok(Box::new(Counts { fpr, cap, key: Arc::clone(&args.exprs[0]), own: None, merged: Merged::default() }))
    }

    fn state_fields(&self, args: StateFieldsArgs) -> Result<Vec<FieldRef>> {
        Ok(vec![
            Arc::new(Field::new(format_state_name(args.name, "sharing"), DataType::UInt64, true)),
            Arc::new(Field::new(format_state_name(args.name, "filter"), DataType::LargeBinary, true)),
        ])
    }

    /// Planning: the constant arguments are checked before any data is read.
    fn simplify(&self) -> Option<AggregateFunctionSimplification> {
        Some(Box::new(|f: AggregateFunction, _| {
            let literals: Vec<_> = f.params.args.iter().map(|e| if let Expr::Literal(v, _) = e { Some(v) } else { None }).collect();
            let consts = Consts::at_planning(BUILD, &literals);
            if consts.known_from(2) {
                parameters(&consts).df()?;
            }
            Ok(Expr::AggregateFunction(f))
        }))
    }

    fn documentation(&self) -> Option<&Documentation> {
        Some(&DOC)
    }
}

/// One filter the partitions of one aggregate in this process fill together.
#[derive(Debug)]
struct Sharing {
    /// Names the filter in partial states: random, so that no two processes pick the same.
    id: u64,
    items: u64,
    filter: SharedBloom,
}

/// Where each open filter is, with the partitions still filling it. The key is the address of the
/// aggregate's first physical argument (one `Arc` for every partition of a plan), with the rate and
/// cap; each partition holds that `Arc`, so the address is not reused while the filter is open.
type Key = (usize, u64, i64);
static SHARINGS: LazyLock<Mutex<HashMap<Key, (Arc<Sharing>, usize)>>> = LazyLock::new(Default::default);

/// A fresh sharing id: each `RandomState` has keys of its own (random per thread, then stepped
/// per state), so no two ids of a process or of two processes are alike but by chance (2^-64).
fn new_id() -> u64 {
    RandomState::new().hash_one(())
}

/// What an aggregate has merged: the filters given, added up, and the ids of filters announced
/// by partitions that finished before their filter's last one.
#[derive(Debug, Default)]
struct Merged {
    total: Option<CountingBloom>,
    given: HashSet<u64>,
    announced: HashSet<u64>,
}

impl Merged {
    /// One partition's state: filter `id`, whole, or announced.
    fn absorb(&mut self, id: u64, filter: Option<CountingBloom>) -> Result<()> {
        let Some(f) = filter else {
            self.announced.insert(id);
            return Ok(());
        };
        if self.given.insert(id) {
            match &mut self.total {
                Some(t) => t.merge(&f).map_err(damaged)?,
                None => self.total = Some(f),
            }
        }
        Ok(())
    }

    /// Every filter given, added up; an error if one announced never came.
    fn sum(&mut self) -> Result<Option<CountingBloom>> {
        if self.announced.iter().any(|id| !self.given.contains(id)) {
            return exec_err!("{BUILD}: a filter's last partition never gave its counts (a partition lost?): run the statement again");
        }
        Ok(self.total.take())
    }

    fn bytes(&self) -> usize {
        self.total.as_ref().map_or(0, CountingBloom::bytes)
    }
}

/// One partition's accumulator: the filter it fills (from its first row), what it merged.
#[derive(Debug)]
struct Counts {
    fpr: f64,
    cap: i64,
    key: Arc<dyn PhysicalExpr>,
    /// The filter this partition fills, until its state is read, and whether it made it.
    own: Option<(Arc<Sharing>, bool)>,
    merged: Merged,
}

impl Counts {
    fn key(&self) -> Key {
        (Arc::as_ptr(&self.key) as *const () as usize, self.fpr.to_bits(), self.cap)
    }

    /// The filter this partition fills: the open one of its aggregate, or a new one.
    fn join(&mut self, items: u64) -> Result<Arc<Sharing>> {
        if let Some((s, _)) = &self.own {
            if s.items != items {
                return exec_err!("{BUILD}: items is {items} here and {} before: give one count for every row", s.items);
            }
            return Ok(Arc::clone(s));
        }
        let key = self.key();
        let mut open = SHARINGS.lock().unwrap_or_else(|p| p.into_inner());
        let (sharing, made) = match open.get_mut(&key) {
            Some((s, _)) if s.items != items => {
                return exec_err!("{BUILD}: items is {items} here and {} in another partition: give one count for every row", s.items)
            }
            Some((s, pending)) => {
                *pending += 1;
                (Arc::clone(s), false)
            }
            None => {
                let filter = SharedBloom::new(BUILD, items, self.fpr, self.cap).df()?;
                let s = Arc::new(Sharing { id: new_id(), items, filter });
                open.insert(key, (Arc::clone(&s), 1));
                (s, true)
            }
        };
        self.own = Some((Arc::clone(&sharing), made));
        Ok(sharing)
    }

    /// Stops filling: the filter's id, and the filter when this partition was its last.
    fn finish(&mut self) -> Option<(u64, Option<CountingBloom>)> {
        let (sharing, _) = self.own.take()?;
        let last = leave(self.key(), &sharing);
        Some((sharing.id, last.then(|| sharing.filter.counts())))
    }
}

/// Takes a partition off `sharing`; true when it was the last, which closes the filter to others.
fn leave(key: Key, sharing: &Arc<Sharing>) -> bool {
    let mut open = SHARINGS.lock().unwrap_or_else(|p| p.into_inner());
    match open.get_mut(&key) {
        Some((s, pending)) if Arc::ptr_eq(s, sharing) => {
            *pending -= 1;
            let last = *pending == 0;
            if last {
                open.remove(&key);
            }
            last
        }
        _ => false,
    }
}

impl Drop for Counts {
    /// A partition dropped before its state was read (a cancelled query) stops filling too.
    fn drop(&mut self) {
        if let Some((sharing, _)) = self.own.take() {
            leave(self.key(), &sharing);
        }
    }
}

impl Accumulator for Counts {
    fn update_batch(&mut self, values: &[ArrayRef]) -> Result<()> {
        let Some(first) = (0..values[0].len()).find(|&i| values[0].is_valid(i)) else { return Ok(()) };
        let items = ScalarValue::try_from_array(&values[1], first)?;
        let Ok(ScalarValue::UInt64(Some(items))) = items.cast_to(&DataType::UInt64) else {
            return exec_err!("{BUILD}: items must be a count (a whole number of at least 0), got {items}");
        };
        let sharing = self.join(items)?;
        match hashes(BUILD, &values[0])? {
            (all, None) => sharing.filter.insert_all(&all),
            (some, Some(nulls)) => {
                sharing.filter.insert_all(&some.iter().zip(nulls.iter()).filter_map(|(&h, valid)| valid.then_some(h)).collect::<Vec<_>>())
            }
        }
        Ok(())
    }

    fn merge_batch(&mut self, states: &[ArrayRef]) -> Result<()> {
        let ids = as_uint64_array(&states[0])?;
        let mut row = 0;
        for_each_bytes(BUILD, &states[1], |bytes| {
            let i = row;
            row += 1;
            if ids.is_null(i) {
                return Ok(());
            }
            let filter = bytes.map(|b| CountingBloom::from_bytes(b).map_err(damaged)).transpose()?;
            self.merged.absorb(ids.value(i), filter)
        })
    }

    /// A partition's state: its filter's id, and the filter if it was the last to finish. An
    /// aggregate that merged others (DataFusion's two-phase plans never ask one for a state) gives
    /// all it has under a new id.
    fn state(&mut self) -> Result<Vec<ScalarValue>> {
        let own = self.finish();
        if self.merged.total.is_none() && self.merged.announced.is_empty() {
            let (id, filter) = own.map_or((None, None), |(id, f)| (Some(id), f.map(|f| f.to_bytes())));
            return Ok(vec![ScalarValue::UInt64(id), ScalarValue::LargeBinary(filter)]);
        }
        let all = self.evaluate_with(own)?;
        Ok(vec![ScalarValue::UInt64(Some(new_id())), all])
    }

    fn evaluate(&mut self) -> Result<ScalarValue> {
        let own = self.finish();
        self.evaluate_with(own)
    }

    fn size(&self) -> usize {
        // The filter a partition shares counts once, in the partition that made it.
        let own = self.own.as_ref().filter(|(_, made)| *made).map_or(0, |(s, _)| s.filter.bytes());
        size_of::<Self>() + own + self.merged.bytes()
    }
}

impl Counts {
    /// Every filter merged and this partition's own, added up, as the aggregate's value.
    fn evaluate_with(&mut self, own: Option<(u64, Option<CountingBloom>)>) -> Result<ScalarValue> {
        if let Some((id, filter)) = own {
            self.merged.absorb(id, filter)?;
        }
        Ok(ScalarValue::LargeBinary(self.merged.sum()?.map(|f| f.to_bytes())))
    }
}

static DOC: LazyLock<Documentation> = LazyLock::new(|| {
    doc(
        "An aggregate: the counting Bloom filter of a column of 64-bit hashes (span_hashes' hash, ngram_hashes), as \
         bytes for one Parquet value. Each hash counts its rows up to cap; the filter never counts a hash below its \
         rows, and counts about a share fpr of the hashes seen fewer than cap times as if they reached it. Counters \
         saturate at cap, so the filter is the same bits on any partitioning, cluster included; the partitions of \
         one process fill one filter together. Size it with items, the rows it will see (a column is fine: every row \
         must hold the same count), at about -ln(fpr)/ln(2)^2 counters per item, of 2 bits for a cap up to 3, 4 up \
         to 15, 8 up to 255: 2.4 bytes per item at fpr 0.01 and cap 2. Write it with COPY to a .parquet file and \
         read it with bloom_count. No rows give NULL.",
        "bloom_counts(hash, items [, fpr, cap])",
    )
    .with_argument("hash", "A UInt64 (or Int64) column of hashes; NULLs are skipped.")
    .with_argument("items", "How many rows the filter will see, for its size: a constant or a column with one value.")
    .with_argument("fpr", "Constant false-positive rate, above 0 and below 1 (default 0.01).")
    .with_argument("cap", "Constant count where counters stop, 1 to 255 (default 2): the count that decides.")
    .with_sql_example("```sql\nSELECT bloom_counts(arrow_cast(v, 'UInt64'), 3) IS NOT NULL AS built FROM (VALUES (1), (2), (2)) AS t(v);\n```")
    .with_related_udf(PROBE)
    .build()
});

/// `bloom_counts`.
pub fn aggregate() -> Arc<AggregateUDF> {
    Arc::new(AggregateUDF::new_from_impl(BloomCounts { signature: arities(2..=4) }))
}

#[cfg(test)]
mod tests {
    use datafusion::physical_plan::{collect, displayable};
    use datafusion::prelude::{SessionConfig, SessionContext};

    use super::*;

    /// The filter of 200,000 rows (70,000 hashes, most of them three times) at `partitions`, and
    /// the plan that made it.
    async fn filter(partitions: usize) -> (Vec<u8>, String) {
        let ctx = SessionContext::new_with_config(SessionConfig::new().with_target_partitions(partitions).with_batch_size(1024));
        ctx.register_udaf(aggregate().as_ref().clone());
        let sql = "SELECT bloom_counts(arrow_cast(v % 70000, 'UInt64'), 200000, 0.01, 2) AS f FROM unnest(range(200000)) AS t(v)";
        let plan = ctx.sql(sql).await.unwrap().create_physical_plan().await.unwrap();
        let shown = displayable(plan.as_ref()).indent(false).to_string();
        let batches = collect(plan, ctx.task_ctx()).await.unwrap();
        let ScalarValue::LargeBinary(Some(bytes)) = ScalarValue::try_from_array(batches[0].column(0), 0).unwrap() else { panic!("no filter") };
        (bytes, shown)
    }

    #[tokio::test]
    async fn the_partitions_of_a_process_fill_one_filter_with_the_bits_of_one_pass() {
        let (one, _) = filter(1).await;
        let (four, plan) = filter(4).await;
        assert!(plan.contains("RoundRobinBatch(4)") && plan.contains("mode=Partial"), "{plan}");
        assert_eq!(one, four);
        let f = CountingBloom::from_bytes(&four).unwrap();
        assert!((0..60_000).all(|h| f.count(h) == 2), "every hash of three rows reaches the cap");
    }

    #[test]
    fn a_filter_announced_but_never_given_fails_the_statement() {
        let mut m = Merged::default();
        m.absorb(7, None).unwrap();
        assert!(m.sum().unwrap_err().to_string().contains("never gave its counts"));
        let mut m = Merged::default();
        m.absorb(7, None).unwrap();
        let f = SharedBloom::new("t", 10, 0.1, 2).unwrap();
        f.insert_all(&[1, 1]);
        m.absorb(7, Some(f.counts())).unwrap();
        assert_eq!(m.sum().unwrap().unwrap().count(1), 2);
    }
}

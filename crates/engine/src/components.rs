//! `CREATE COMPONENTS name FROM relation (a, b) LOCATION 'dir/'`: the connected components of
//! an edge table, as rounds of SQL, so that each round is planned by DataFusion and runs wherever
//! the session runs (locally, or shuffled across Ballista executors). No step collects edges or
//! nodes into one process.
//!
//! The rounds alternate large-star and small-star (Kiveris et al., "Connected Components in
//! MapReduce and Beyond", SoCC 2014) until every node points straight at the smallest node of its
//! component. `name` becomes a table `(node, component)` over `dir/components/`, one row per node
//! that has an edge, its own component included; `component` is the component's smallest node.
//! Each round is written as Parquet under `dir/` and removed once the next one is written.

use std::sync::Arc;

use datafusion::error::{DataFusionError, Result};
use datafusion::prelude::SessionContext;
use datafusion::sql::sqlparser::tokenizer::Token;
use futures::TryStreamExt;
use object_store::{ObjectStore, ObjectStoreExt};
use serde::Serialize;
use crate::sink::store_and_dir;

use crate::sink::manifest::RecipeId;
use crate::sink::{self, ParquetTarget, PlanFacts};

/// Rounds are O(log^2 n) in theory and a handful in practice; more means something is wrong.
const MAX_ROUNDS: usize = 64;

const EDGE: &str = "a, b";

#[derive(Debug, Clone, PartialEq)]
pub struct Components {
    pub name: String,
    pub relation: String,
    pub a: String,
    pub b: String,
    pub location: String,
}

pub const SYNTAX: &str = "CREATE COMPONENTS name FROM relation (column_a, column_b) LOCATION 'directory/'";

impl Components {
    /// Reads the statement from its tokens (blanks and comments left out), `CREATE COMPONENTS`
    /// first; an error gives the syntax.
    pub fn parse<'t>(tokens: impl Iterator<Item = &'t Token>) -> std::result::Result<Self, String> {
        let mut t = tokens.skip(2);
        let word = |t: Option<&Token>| match t {
            Some(Token::Word(w)) => Some(w.value.clone()),
            _ => None,
        };
        let keyword = |t: Option<&Token>, k: &str| matches!(t, Some(Token::Word(w)) if w.quote_style.is_none() && w.value.eq_ignore_ascii_case(k));
        let parsed = (|| {
            let name = word(t.next())?.to_lowercase();
            keyword(t.next(), "FROM").then_some(())?;
            // A relation may be qualified: `schema.table`.
            let mut relation = word(t.next())?;
            let mut next = t.next();
            while next == Some(&Token::Period) {
                relation = format!("{relation}.{}", word(t.next())?);
                next = t.next();
            }
            (next == Some(&Token::LParen)).then_some(())?;
            let a = word(t.next())?;
            (t.next() == Some(&Token::Comma)).then_some(())?;
            let b = word(t.next())?;
            (t.next() == Some(&Token::RParen)).then_some(())?;
            keyword(t.next(), "LOCATION").then_some(())?;
            let Some(Token::SingleQuotedString(location)) = t.next() else { return None };
            t.next().is_none().then(|| Self { name, relation, a, b, location: location.trim_end_matches('/').to_string() + "/" })
        })();
        parsed.ok_or_else(|| format!("expected {SYNTAX}"))
    }
}

/// What one `CREATE COMPONENTS` did.
#[derive(Debug, Clone, Serialize)]
pub struct ComponentsStats {
    /// The result's view name.
    pub name: String,
    /// Where its rounds were written.
    pub location: String,
    /// Edges in the input relation.
    pub input_edges: u64,
    /// Rounds of large-star/small-star until nothing changed.
    pub rounds: usize,
    /// Distinct nodes.
    pub nodes: u64,
    /// Connected components.
    pub components: u64,
}

/// Large-star: every node links its larger neighbours to the smallest of itself and its neighbours.
fn large_star(edges: &str) -> String {
    format!(
        "WITH sym AS (SELECT a AS v, b AS u FROM {edges} UNION ALL SELECT b AS v, a AS u FROM {edges}), \
              m AS (SELECT v, least(v, min(u)) AS mu FROM sym GROUP BY v) \
         SELECT DISTINCT s.u AS a, m.mu AS b FROM sym s JOIN m ON s.v = m.v WHERE s.u > s.v"
    )
}

/// Small-star, on edges that point from larger to smaller: every node links itself and its smaller
/// neighbours to the smallest of them.
fn small_star(edges: &str) -> String {
    format!(
        "WITH m AS (SELECT a AS v, min(b) AS mu FROM {edges} GROUP BY a) \
         SELECT e.b AS a, m.mu AS b FROM {edges} e JOIN m ON e.a = m.v WHERE e.b <> m.mu \
         UNION SELECT v AS a, mu AS b FROM m"
    )
}

/// Rows that keep the edges from being stars centred on their smallest node: a node with two
/// targets, or a target that points on. Zero means done.
fn not_star(edges: &str) -> String {
    format!(
        "SELECT count(*) AS n FROM (SELECT a FROM {edges} GROUP BY a HAVING count(*) > 1 \
         UNION ALL SELECT x.a FROM {edges} x JOIN (SELECT DISTINCT a FROM {edges}) y ON x.b = y.a)"
    )
}

/// Every node of star-shaped edges with its component: `(a, b)` for each edge and `(b, b)` for
/// each root. In a star each node points at one root and no root points on, so DISTINCT keeps
/// exactly those rows. (A UNION ALL of the edges and the distinct roots said the same, but its
/// two branches have different partition counts, and Ballista 55's scheduler then gets task
/// metrics of different lengths from one stage and never finishes the job.)
fn with_star_roots(edges: &str) -> String {
    format!("SELECT DISTINCT node, component FROM (SELECT unnest(make_array(a, b)) AS node, b AS component FROM {edges})")
}

struct Round<'a> {
    ctx: &'a SessionContext,
    c: &'a Components,
    recipe: &'a RecipeId,
    store: Arc<dyn ObjectStore>,
}

impl Round<'_> {
    /// Writes a query's rows under `location/dir/` and registers them as view `table`.
    async fn write(&self, sql: &str, dir: &str, table: &str, columns: &str) -> Result<u64> {
        let location = format!("{}{dir}/", self.c.location);
        let input = self.ctx.sql(sql).await?.into_unoptimized_plan();
        // Scratch, written once and read back once: lz4_raw as the recipes' work tables, not
        // the outputs' zstd(3) (docs/guide/dedup.md).
        let target = ParquetTarget::new(&location, &[("compression".into(), "lz4_raw".into())])?;
        let (plan, copy) = sink::plan(self.ctx, input, target, PlanFacts::default(), self.recipe, &location).await?;
        let written = sink::write(self.ctx, plan, &copy).await?;
        self.ctx.deregister_table(table)?;
        // A view over read_parquet, not an external table: Ballista's plan encoding loses the
        // `*.parquet` glob of a listing table and would read the manifest as Parquet.
        self.ctx.sql(&format!("CREATE VIEW {table} AS SELECT {columns} FROM read_parquet('{location}')")).await?.collect().await?;
        Ok(written.manifest.rows)
    }

    async fn count(&self, sql: &str) -> Result<u64> {
        let batches = self.ctx.sql(sql).await?.collect().await?;
        let value = batches.first().filter(|b| b.num_rows() == 1).and_then(|b| {
            b.column(0).as_any().downcast_ref::<datafusion::arrow::array::Int64Array>().map(|a| a.value(0))
        });
        value.map(|v| v as u64).ok_or_else(|| DataFusionError::Internal(format!("expected one count from `{sql}`")))
    }

    async fn remove(&self, dir: &str, table: &str) -> Result<()> {
        self.ctx.deregister_table(table)?;
        let location = format!("{}{dir}/", self.c.location);
        let (_, path) = store_and_dir(&self.ctx.runtime_env(), &location)?;
        let listed: Vec<_> = self.store.list(Some(&path)).try_collect().await.map_err(|e| DataFusionError::External(Box::new(e)))?;
        for m in listed {
            self.store.delete(&m.location).await.map_err(|e| DataFusionError::External(Box::new(e)))?;
        }
        // Object stores have no directories; a local file system keeps the empty one.
        if let Some(local) = crate::store::local_path(&location) {
            let _ = std::fs::remove_dir(local);
        }
        Ok(())
    }
}

pub async fn run(ctx: &SessionContext, c: &Components, recipe: &RecipeId) -> Result<ComponentsStats> {
    let (store, _) = store_and_dir(&ctx.runtime_env(), &c.location)?;
    let round = Round { ctx, c, recipe, store };
    let t = |phase: &str| format!("__tokq_components_{}_{phase}", c.name);
    let (a, b, rel) = (&c.a, &c.b, &c.relation);
    let input = format!("SELECT DISTINCT {a} AS a, {b} AS b FROM {rel} WHERE {a} IS NOT NULL AND {b} IS NOT NULL AND {a} <> {b}");
    let input_edges = round.write(&input, "input", &t("input"), EDGE).await?;
    let mut current = (t("input"), "input".to_string());
    let mut rounds = 0;
    // No edge needs no round: a corpus without near duplicates, where each round's three jobs
    // would cost a cluster about 0.3 s for nothing.
    while input_edges > 0 {
        rounds += 1;
        if rounds > MAX_ROUNDS {
            return Err(DataFusionError::Execution(format!("CREATE COMPONENTS {}: no convergence after {MAX_ROUNDS} rounds", c.name)));
        }
        let large = (t("large"), format!("round-{rounds:03}-large"));
        round.write(&large_star(&current.0), &large.1, &large.0, EDGE).await?;
        round.remove(&current.1, &current.0).await?;
        let small = (t("small"), format!("round-{rounds:03}-small"));
        round.write(&small_star(&large.0), &small.1, &small.0, EDGE).await?;
        round.remove(&large.1, &large.0).await?;
        current = small;
        if round.count(&not_star(&current.0)).await? == 0 {
            break;
        }
    }
    let nodes = round.write(&with_star_roots(&current.0), "components", &c.name, "node, component").await?;
    round.remove(&current.1, &current.0).await?;
    let components = match nodes {
        0 => 0,
        _ => round.count(&format!("SELECT count(DISTINCT component) AS n FROM {}", c.name)).await?,
    };
    Ok(ComponentsStats { name: c.name.clone(), location: c.location.clone(), input_edges, rounds, nodes, components })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(sql: &str) -> Option<std::result::Result<Components, String>> {
        match crate::recipe::parse_one(sql) {
            Ok(crate::recipe::TokqStatement::Components(c)) => Some(Ok(c)),
            Ok(_) => None,
            Err(e) => Some(Err(e.to_string())),
        }
    }

    #[test]
    fn parses_the_statement() {
        let c = parse("-- clusters\nCREATE COMPONENTS clusters FROM candidates (x, y) LOCATION 'work/cc'").unwrap().unwrap();
        assert_eq!(c, Components { name: "clusters".into(), relation: "candidates".into(), a: "x".into(), b: "y".into(), location: "work/cc/".into() });
        assert!(parse("create components c from e(a,b) location 's3://b/x/'").unwrap().is_ok());
        assert_eq!(parse("CREATE COMPONENTS c FROM s.e (a, b) LOCATION 'x'").unwrap().unwrap().relation, "s.e");
        for bad in ["CREATE COMPONENTS c FROM e LOCATION 'x'", "CREATE COMPONENTS c FROM e (a, b) LOCATION 'x' now"] {
            let e = parse(bad).unwrap().unwrap_err();
            assert!(e.contains(SYNTAX), "{e}");
        }
        assert!(parse("CREATE VIEW components AS SELECT 1").is_none());
        assert!(parse("SELECT 'CREATE COMPONENTS'").is_none());
    }
}

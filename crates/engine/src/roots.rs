//! Allowed data roots: the local folders and buckets a cluster node may read and write. A
//! scheduler or executor started with `--allow-root` fences every object store it makes (see
//! [`crate::store`]) and the loader of tokenizer, model and list files, so a job that names
//! `/etc/passwd` or another bucket fails on that path, whichever function or statement named it.
//!
//! The fence is a process setting, made once when a node starts: object stores are made inside
//! DataFusion's registry and files are loaded inside function bodies, where no session is at hand.
//! Paths are compared as written, after `.` and `..` are resolved; a link inside a root that points
//! elsewhere is followed (the trust model in docs/cluster.md says so).

use std::fmt;
use std::ops::Range;
use std::sync::{Arc, OnceLock};

use async_trait::async_trait;
use bytes::Bytes;
use datafusion::common::tree_node::Transformed;
use datafusion::common::DataFusionError;
use datafusion::logical_expr::LogicalPlan;
use datafusion::optimizer::{OptimizerConfig, OptimizerRule};
use futures::stream::{self, BoxStream, StreamExt};
use object_store::path::Path;
use object_store::{
    CopyOptions, GetOptions, GetResult, ListResult, MultipartUpload, ObjectMeta, ObjectStore, PutMultipartOptions,
    PutOptions, PutPayload, PutResult, RenameOptions, Result,
};
use url::Url;

use crate::store::{object_path, store_url, to_url};
use tokq_core::error::TokqError;

/// One allowed root: a store (`file://`, `s3://bucket`) and a folder in it (empty: all of it).
#[derive(Debug, Clone, PartialEq)]
struct Root {
    store: String,
    folder: Path,
}

/// The roots a node may touch.
#[derive(Debug, Clone, PartialEq)]
pub struct Roots(Vec<Root>);

static FENCE: OnceLock<Roots> = OnceLock::new();

impl Roots {
    /// Roots as a user gives them: local folders (absolute or relative to the working folder) and
    /// `s3://bucket` or `s3://bucket/prefix`.
    pub fn parse(list: &[String]) -> tokq_core::error::Result<Self> {
        list.iter()
            .map(|r| {
                let url = to_url(r)?;
                Ok(Root { store: store_url(&url), folder: object_path(r)? })
            })
            .collect::<tokq_core::error::Result<_>>()
            .map(Roots)
    }

    /// Makes these the roots of this process; a second call is refused.
    pub fn enforce(self) -> std::result::Result<(), TokqError> {
        FENCE.set(self).map_err(|_| TokqError::Io { uri: String::new(), cause: "the allowed roots are already set".into() })
    }

    /// Whether `path` in `store` is inside a root.
    fn allows(&self, store: &str, path: &Path) -> bool {
        self.0.iter().any(|r| r.store == store && path.prefix_matches(&r.folder))
    }

    /// Whether a listing under `prefix` can find anything inside a root.
    fn can_list(&self, store: &str, prefix: Option<&Path>) -> bool {
        let prefix = prefix.cloned().unwrap_or_default();
        self.0.iter().any(|r| r.store == store && (prefix.prefix_matches(&r.folder) || r.folder.prefix_matches(&prefix)))
    }

    /// Why `path` is refused, and what to do.
    fn refused(&self, store: &str, path: &Path) -> TokqError {
        let roots: Vec<String> = self.0.iter().map(|r| shown(&r.store, &r.folder)).collect();
        TokqError::OutsideRoots { path: shown(store, path), roots: roots.join(", ") }
    }

    fn refusal(&self, store: &str, path: &Path) -> object_store::Error {
        object_store::Error::PermissionDenied { path: shown(store, path), source: Box::new(self.refused(store, path)) }
    }
}

/// A location as a user writes it.
fn shown(store: &str, path: &Path) -> String {
    if store == "file://" { format!("/{path}") } else { format!("{store}/{path}") }
}

/// The process's roots, if it is fenced.
fn fence() -> Option<&'static Roots> {
    FENCE.get()
}

/// Refuses a location outside the process's roots: a whole-file read (tokenizers, models, lists)
/// or an output folder.
pub fn check_location(location: &str) -> tokq_core::error::Result<()> {
    let Some(roots) = fence() else { return Ok(()) };
    let url: Url = to_url(location)?;
    let (store, path) = (store_url(&url), object_path(location)?);
    if roots.allows(&store, &path) {
        return Ok(());
    }
    Err(roots.refused(&store, &path))
}

/// [`check_location`] for a planner: the refusal as a planning error.
pub(crate) fn check_planned(location: &str) -> datafusion::common::Result<()> {
    check_location(location).map_err(|e| DataFusionError::Plan(e.to_string()))
}

/// Refuses at planning a `COPY` whose target is outside the process's roots, in any format, with
/// the refusal's own words: a fenced store refuses the write too, but DataFusion's CSV, JSON and
/// Arrow writers report a failed write only as "Error encountered while finalizing writes".
#[derive(Debug, Default)]
pub(crate) struct FencedOutputs;

impl OptimizerRule for FencedOutputs {
    fn name(&self) -> &str {
        "fenced_outputs"
    }

    fn supports_rewrite(&self) -> bool {
        true
    }

    fn rewrite(&self, plan: LogicalPlan, _: &dyn OptimizerConfig) -> datafusion::common::Result<Transformed<LogicalPlan>> {
        if let LogicalPlan::Copy(copy) = &plan {
            check_planned(&copy.output_url)?;
        }
        Ok(Transformed::no(plan))
    }
}

/// `inner`, the store of `url`, fenced by the process's roots if it has any.
pub fn fenced(url: &Url, inner: Arc<dyn ObjectStore>) -> Arc<dyn ObjectStore> {
    match fence() {
        Some(roots) => Arc::new(Fenced { inner, store: store_url(url), roots: roots.clone() }),
        None => inner,
    }
}

/// A store that refuses every path outside the roots before its inner store sees it.
#[derive(Debug)]
struct Fenced {
    inner: Arc<dyn ObjectStore>,
    store: String,
    roots: Roots,
}

impl fmt::Display for Fenced {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Fenced({})", self.inner)
    }
}

impl Fenced {
    fn check(&self, path: &Path) -> Result<()> {
        if self.roots.allows(&self.store, path) { Ok(()) } else { Err(self.roots.refusal(&self.store, path)) }
    }

    /// A listing under `prefix`, refused if it cannot reach a root, and kept to what is inside one.
    fn listing(&self, prefix: Option<&Path>, list: BoxStream<'static, Result<ObjectMeta>>) -> BoxStream<'static, Result<ObjectMeta>> {
        if !self.roots.can_list(&self.store, prefix) {
            let refused = self.roots.refusal(&self.store, &prefix.cloned().unwrap_or_default());
            return stream::once(async move { Err(refused) }).boxed();
        }
        let (roots, store) = (self.roots.clone(), self.store.clone());
        list.filter(move |m| std::future::ready(m.as_ref().map_or(true, |m| roots.allows(&store, &m.location)))).boxed()
    }
}

#[async_trait]
impl ObjectStore for Fenced {
    async fn put_opts(&self, location: &Path, payload: PutPayload, opts: PutOptions) -> Result<PutResult> {
        self.check(location)?;
        self.inner.put_opts(location, payload, opts).await
    }

    async fn put_multipart_opts(&self, location: &Path, opts: PutMultipartOptions) -> Result<Box<dyn MultipartUpload>> {
        self.check(location)?;
        self.inner.put_multipart_opts(location, opts).await
    }

    async fn get_opts(&self, location: &Path, options: GetOptions) -> Result<GetResult> {
        self.check(location)?;
        self.inner.get_opts(location, options).await
    }

    async fn get_ranges(&self, location: &Path, ranges: &[Range<u64>]) -> Result<Vec<Bytes>> {
        self.check(location)?;
        self.inner.get_ranges(location, ranges).await
    }

    fn delete_stream(&self, locations: BoxStream<'static, Result<Path>>) -> BoxStream<'static, Result<Path>> {
        let (roots, store) = (self.roots.clone(), self.store.clone());
        let allowed = locations
            .map(move |p| match p {
                Ok(p) if !roots.allows(&store, &p) => Err(roots.refusal(&store, &p)),
                other => other,
            })
            .boxed();
        self.inner.delete_stream(allowed)
    }

    fn list(&self, prefix: Option<&Path>) -> BoxStream<'static, Result<ObjectMeta>> {
        self.listing(prefix, self.inner.list(prefix))
    }

    fn list_with_offset(&self, prefix: Option<&Path>, offset: &Path) -> BoxStream<'static, Result<ObjectMeta>> {
        self.listing(prefix, self.inner.list_with_offset(prefix, offset))
    }

    async fn list_with_delimiter(&self, prefix: Option<&Path>) -> Result<ListResult> {
        if !self.roots.can_list(&self.store, prefix) {
            return Err(self.roots.refusal(&self.store, &prefix.cloned().unwrap_or_default()));
        }
        let mut found = self.inner.list_with_delimiter(prefix).await?;
        found.objects.retain(|m| self.roots.allows(&self.store, &m.location));
        found.common_prefixes.retain(|p| self.roots.can_list(&self.store, Some(p)));
        Ok(found)
    }

    async fn copy_opts(&self, from: &Path, to: &Path, options: CopyOptions) -> Result<()> {
        self.check(from)?;
        self.check(to)?;
        self.inner.copy_opts(from, to, options).await
    }

    async fn rename_opts(&self, from: &Path, to: &Path, options: RenameOptions) -> Result<()> {
        self.check(from)?;
        self.check(to)?;
        self.inner.rename_opts(from, to, options).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use object_store::memory::InMemory;
    use object_store::ObjectStoreExt;

    fn roots() -> Roots {
        Roots::parse(&["/data/corpus/".into(), "s3://bucket-a".into(), "s3://bucket-b/shared/".into()]).unwrap()
    }

    #[test]
    fn paths_inside_a_root_are_allowed_and_nothing_else() {
        let r = roots();
        let p = |s: &str| Path::parse(s).unwrap();
        assert!(r.allows("file://", &p("data/corpus/a.jsonl")));
        assert!(r.allows("file://", &p("data/corpus")));
        assert!(!r.allows("file://", &p("data/corpus2/a.jsonl")), "a root is a folder, not a string prefix");
        assert!(!r.allows("file://", &p("etc/passwd")));
        assert!(r.allows("s3://bucket-a", &p("any/key")));
        assert!(!r.allows("s3://bucket-b", &p("private/key")));
        assert!(r.allows("s3://bucket-b", &p("shared/key")));
        assert!(!r.allows("s3://bucket-c", &p("shared/key")));
        assert!(r.can_list("file://", Some(&p("data"))), "a parent of a root can be listed (kept to the root)");
        assert!(!r.can_list("file://", Some(&p("etc"))));
        let escaped = Roots::parse(&["/data/corpus/../../etc".into()]).unwrap();
        assert!(escaped.allows("file://", &p("etc/passwd")), "`..` is resolved before comparing");
        assert!(!escaped.allows("file://", &p("data/corpus/x")));
    }

    #[tokio::test]
    async fn a_fenced_store_refuses_reads_writes_and_listings_outside_and_names_the_roots() {
        let inner: Arc<dyn ObjectStore> = Arc::new(InMemory::new());
        for key in ["data/corpus/a.jsonl", "data/other/b.jsonl", "etc/passwd"] {
            inner.put(&Path::parse(key).unwrap(), PutPayload::from_static(b"x")).await.unwrap();
        }
        let store = Fenced { inner, store: "file://".into(), roots: roots() };
        let p = |s: &str| Path::parse(s).unwrap();
        assert!(store.get(&p("data/corpus/a.jsonl")).await.is_ok());
        let refused = store.get(&p("etc/passwd")).await.unwrap_err().to_string();
        assert!(refused.contains("/etc/passwd is outside this node's allowed roots (/data/corpus, s3://bucket-a/, s3://bucket-b/shared)"), "{refused}");
        assert!(store.put(&p("tmp/out.csv"), PutPayload::from_static(b"y")).await.is_err());
        assert!(store.copy(&p("data/corpus/a.jsonl"), &p("tmp/a")).await.is_err());
        let listed: Vec<String> = store.list(Some(&p("data"))).map(|m| m.unwrap().location.to_string()).collect().await;
        assert_eq!(listed, ["data/corpus/a.jsonl"]);
        assert!(store.list(Some(&p("etc"))).collect::<Vec<_>>().await[0].is_err());
        let deleted: Vec<_> = store.delete_stream(stream::iter([Ok(p("etc/passwd"))]).boxed()).collect().await;
        assert!(deleted[0].is_err());
    }
}

//! Allowed data roots: the local folders and buckets a cluster node may read and write. A
//! scheduler or executor started with `--allow-root` fences every object store it makes (see
//! [`crate::store`]) and the loader of tokenizer, model and list files, so a job that names
//! `/etc/passwd` or another bucket fails on that path, whichever function or statement named it.
//!
//! The fence is a process setting, made once when a node starts: object stores are made inside
//! DataFusion's registry and files are loaded inside function bodies, where no session is at hand.
//! Local paths are compared by where they really lead: every link in them is resolved, so a link
//! inside a root that points elsewhere is refused and one that stays inside works. A read is
//! checked again on the file it opened (its handle's real path), so a link swapped in after the
//! check cannot redirect it; a write is checked just before the store makes its file (the window
//! that remains is in docs/cluster.md).

use std::fmt;
use std::fs::File;
use std::ops::Range;
use std::path::PathBuf;
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
    CopyOptions, GetOptions, GetResult, GetResultPayload, ListResult, MultipartUpload, ObjectMeta, ObjectStore, PutMultipartOptions,
    PutOptions, PutPayload, PutResult, RenameOptions, Result,
};
use url::Url;

use crate::store::{object_path, store_url, to_url};
use tokq_core::error::TokqError;

/// One allowed root: a store (`file://`, `s3://bucket`) and a folder in it (empty: all of it);
/// a local root also by its real path, taken when the node starts.
#[derive(Debug, Clone, PartialEq)]
struct Root {
    store: String,
    folder: Path,
    real: Option<PathBuf>,
}

const LOCAL: &str = "file://";

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
                let (store, folder) = (store_url(&to_url(r)?), object_path(r)?);
                let real = (store == LOCAL).then(|| real_path(&local(&folder))).flatten();
                Ok(Root { store, folder, real })
            })
            .collect::<tokq_core::error::Result<_>>()
            .map(Roots)
    }

    /// Makes these the roots of this process; a second call is refused.
    pub fn enforce(self) -> std::result::Result<(), TokqError> {
        FENCE.set(self).map_err(|_| TokqError::Io { uri: String::new(), cause: "the allowed roots are already set".into() })
    }

    /// Whether `path` in `store` is inside a root; a local path by where it really leads.
    fn allows(&self, store: &str, path: &Path) -> bool {
        if store != LOCAL {
            return self.written_inside(store, path);
        }
        real_path(&local(path)).is_some_and(|real| self.really_inside(&real))
    }

    /// Whether `path` is inside a root as written, links not followed.
    fn written_inside(&self, store: &str, path: &Path) -> bool {
        self.0.iter().any(|r| r.store == store && path.prefix_matches(&r.folder))
    }

    /// Whether the real local path `real` is inside a local root.
    fn really_inside(&self, real: &std::path::Path) -> bool {
        self.0.iter().any(|r| r.real.as_ref().is_some_and(|root| real.starts_with(root)))
    }

    /// Whether a local file that was opened at a path inside a root is really there, not moved out
    /// by a link swapped in between the check and the open. Without `/proc` the check before the
    /// open stands alone.
    fn opened_inside(&self, file: &File) -> bool {
        use std::os::fd::AsRawFd;
        std::fs::read_link(format!("/proc/self/fd/{}", file.as_raw_fd())).map_or(true, |real| self.really_inside(&real))
    }

    /// Whether a listing under `prefix` can find anything inside a root.
    fn can_list(&self, store: &str, prefix: Option<&Path>) -> bool {
        let prefix = prefix.cloned().unwrap_or_default();
        self.0.iter().any(|r| r.store == store && (prefix.prefix_matches(&r.folder) || r.folder.prefix_matches(&prefix)))
    }

    /// Why `path` is refused, and what to do; a path inside a root as written is named with
    /// where its links lead.
    fn refused(&self, store: &str, path: &Path) -> TokqError {
        let roots: Vec<String> = self.0.iter().map(|r| shown(&r.store, &r.folder)).collect();
        let mut named = shown(store, path);
        if store == LOCAL && self.written_inside(store, path) {
            match real_path(&local(path)) {
                Some(real) => named = format!("{named} (a link to {})", real.display()),
                None => named = format!("{named} (a link to nothing)"),
            }
        }
        TokqError::OutsideRoots { path: named, roots: roots.join(", ") }
    }

    fn refusal(&self, store: &str, path: &Path) -> object_store::Error {
        object_store::Error::PermissionDenied { path: shown(store, path), source: Box::new(self.refused(store, path)) }
    }
}

/// A location as a user writes it.
fn shown(store: &str, path: &Path) -> String {
    if store == LOCAL { format!("/{path}") } else { format!("{store}/{path}") }
}

/// The local file of a `file://` store path.
fn local(path: &Path) -> PathBuf {
    PathBuf::from(format!("/{path}"))
}

/// Where a local path really leads: the links of the part that exists resolved, and the rest (a
/// file or folder about to be written) joined as written. `None` for a link to nothing, which a
/// write would follow out of any root.
fn real_path(path: &std::path::Path) -> Option<PathBuf> {
    let mut missing = Vec::new();
    let mut at = path;
    loop {
        match std::fs::canonicalize(at) {
            Ok(real) => return Some(missing.iter().rev().fold(real, |p, part| p.join(part))),
            Err(_) if at.symlink_metadata().is_ok_and(|m| m.is_symlink()) => return None,
            Err(_) => {
                missing.push(at.file_name()?);
                at = at.parent()?;
            }
        }
    }
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

/// Opens a local file for a whole-file read, refused outside the process's roots both before the
/// open and on the file it opened.
pub fn open_local(location: &str, path: &std::path::Path) -> tokq_core::error::Result<File> {
    check_location(location)?;
    let file = File::open(path).map_err(|e| TokqError::Io { uri: location.into(), cause: e.to_string() })?;
    if let Some(roots) = fence() {
        if !roots.opened_inside(&file) {
            return Err(roots.refused(LOCAL, &object_path(location)?));
        }
    }
    Ok(file)
}

/// [`check_location`] for a target a planner is about to write, and refused on the stores tokq only
/// reads ([`crate::store::writable`]): the refusal as a planning error.
pub(crate) fn check_planned(location: &str) -> datafusion::common::Result<()> {
    crate::store::writable(location).and_then(|()| check_location(location)).map_err(|e| DataFusionError::Plan(e.to_string()))
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
        list.filter(move |m| std::future::ready(m.as_ref().map_or(true, |m| roots.listed(&store, &m.location)))).boxed()
    }

    /// The file a local read opened, refused if a link swapped in since the check moved it out.
    fn opened(&self, location: &Path, got: GetResult) -> Result<GetResult> {
        match &got.payload {
            GetResultPayload::File(file, _) if !self.roots.opened_inside(file) => Err(self.roots.refusal(LOCAL, location)),
            _ => Ok(got),
        }
    }
}

impl Roots {
    /// Whether a listing shows `path`: what is inside a root. A file inside one as written that
    /// leads out through a link is left out with a warning in this node's log (reading it by
    /// name is refused), so one such link does not fail every listing of its folder.
    fn listed(&self, store: &str, path: &Path) -> bool {
        if self.allows(store, path) {
            return true;
        }
        if self.written_inside(store, path) {
            log::warn!("{}", self.refused(store, path));
        }
        false
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
        self.opened(location, self.inner.get_opts(location, options).await?)
    }

    async fn get_ranges(&self, location: &Path, ranges: &[Range<u64>]) -> Result<Vec<Bytes>> {
        self.check(location)?;
        if self.store != LOCAL {
            return self.inner.get_ranges(location, ranges).await;
        }
        // The local store opens the file itself here; open it through get_opts, whose handle is
        // checked, and read the ranges from that.
        let got = self.opened(location, self.inner.get_opts(location, GetOptions::new().with_head(true)).await?)?;
        let GetResultPayload::File(file, path) = got.payload else { return self.inner.get_ranges(location, ranges).await };
        let ranges = ranges.to_vec();
        let read = move || -> Result<Vec<Bytes>> {
            use std::os::unix::fs::FileExt;
            ranges
                .into_iter()
                .map(|r| {
                    let mut buf = vec![0; (r.end - r.start) as usize];
                    file.read_exact_at(&mut buf, r.start).map(|()| Bytes::from(buf)).map_err(|e| object_store::Error::Generic {
                        store: "LocalFileSystem",
                        source: format!("cannot read bytes {r:?} of {}: {e}", path.display()).into(),
                    })
                })
                .collect()
        };
        tokio::task::spawn_blocking(read).await.map_err(|e| object_store::Error::JoinError { source: e })?
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
        found.objects.retain(|m| self.roots.listed(&self.store, &m.location));
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

    #[tokio::test]
    async fn links_are_judged_by_where_they_lead() {
        let tmp = tempfile::tempdir().unwrap();
        let (root, outside) = (tmp.path().join("root"), tmp.path().join("outside"));
        for d in [root.join("sub"), outside.clone()] {
            std::fs::create_dir_all(d).unwrap();
        }
        std::fs::write(root.join("sub/in.csv"), "a\n1\n").unwrap();
        std::fs::write(outside.join("secret.csv"), "a\n2\n").unwrap();
        let link = |to: &std::path::Path, name: &str| std::os::unix::fs::symlink(to, root.join(name)).unwrap();
        link(&outside, "outlink");
        link(&root.join("sub"), "inlink");
        link(&outside.join("secret.csv"), "secret.csv");
        link(&outside.join("gone"), "dangling");
        let roots = Roots::parse(&[root.display().to_string()]).unwrap();
        let store = Fenced {
            inner: Arc::new(object_store::local::LocalFileSystem::new()),
            store: LOCAL.into(),
            roots: roots.clone(),
        };
        let at = |p: &std::path::Path| Path::from_absolute_path(p).unwrap();

        // A link that stays inside works, for whole reads and ranges alike.
        assert_eq!(store.get(&at(&root.join("inlink/in.csv"))).await.unwrap().bytes().await.unwrap().as_ref(), b"a\n1\n");
        assert_eq!(store.get_ranges(&at(&root.join("inlink/in.csv")), &[0..1, 2..3]).await.unwrap(), [Bytes::from("a"), Bytes::from("1")]);
        // Links out are refused for reads, ranges, writes and copies, and named with their target.
        for path in [root.join("outlink/secret.csv"), root.join("secret.csv")] {
            let refused = store.get(&at(&path)).await.unwrap_err().to_string();
            assert!(refused.contains(&format!("{} (a link to {}) is outside", path.display(), outside.join("secret.csv").display())), "{refused}");
            assert!(store.get_ranges(&at(&path), &[0..1]).await.is_err());
        }
        for target in ["outlink/victim.csv", "outlink/new/part.parquet", "dangling", "dangling/x"] {
            let put = store.put(&at(&root.join(target)), PutPayload::from_static(b"pwned")).await;
            assert!(put.is_err(), "{target} was written");
        }
        assert!(store.copy(&at(&root.join("sub/in.csv")), &at(&root.join("outlink/copied.csv"))).await.is_err());
        assert_eq!(std::fs::read_dir(&outside).unwrap().count(), 1, "nothing was written outside");
        assert!(store.put(&at(&root.join("inlink/new.csv")), PutPayload::from_static(b"ok")).await.is_ok());
        // A listing of the root leaves out what leads out of it, and keeps what stays in.
        let mut listed: Vec<String> = store.list(Some(&at(&root))).map(|m| m.unwrap().location.to_string()).collect().await;
        listed.sort();
        let rel = |p: &str| at(&root.join(p)).to_string();
        assert_eq!(listed, [rel("inlink/in.csv"), rel("inlink/new.csv"), rel("sub/in.csv"), rel("sub/new.csv")]);
        // A file opened inside a root is checked again on its handle: one that is really outside is refused.
        assert!(roots.opened_inside(&File::open(root.join("sub/in.csv")).unwrap()));
        assert!(!roots.opened_inside(&File::open(outside.join("secret.csv")).unwrap()));
    }
}

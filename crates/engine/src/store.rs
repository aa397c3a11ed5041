//! Object stores for every role: local files, `s3://` buckets configured from the usual AWS
//! environment variables (`AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`, `AWS_REGION`,
//! `AWS_ENDPOINT`, `AWS_ALLOW_HTTP`), and for inputs the Hugging Face Hub (`hf://`, [`crate::hub`])
//! and plain `https://` (or `http://`) servers. One client per bucket, hub kind or server, made on
//! first use and then shared.

use tokq_udfs::args::OrDf;
use std::collections::HashMap;
use std::sync::{Arc, RwLock};

use datafusion::error::Result as DfResult;
use datafusion::execution::object_store::{ObjectStoreRegistry, ObjectStoreUrl};
use object_store::aws::AmazonS3Builder;
use object_store::http::HttpBuilder;
use object_store::{ClientOptions, ObjectStore, ObjectStoreExt};
use url::Url;

use tokq_core::error::{Result, TokqError};
use crate::durable::DurableLocal;
use crate::hub::HubStore;

/// Object stores by scheme and bucket, made on first use.
#[derive(Debug, Default)]
pub struct TokqObjectStoreRegistry {
    stores: RwLock<HashMap<String, Arc<dyn ObjectStore>>>,
}

/// The store-root of a location (`file://`, `s3://bucket`, `https://host:port`): the registry
/// key, and the prefix a store-relative path is appended to after a '/'.
pub fn store_url(url: &Url) -> String {
    match url.port() {
        Some(port) => format!("{}://{}:{port}", url.scheme(), url.host_str().unwrap_or("")),
        None => format!("{}://{}", url.scheme(), url.host_str().unwrap_or("")),
    }
}

/// The DataFusion object-store URL of a location's store.
pub fn object_store_url(url: &Url) -> DfResult<ObjectStoreUrl> {
    ObjectStoreUrl::parse(store_url(url))
}

impl TokqObjectStoreRegistry {
    /// An empty registry.
    pub fn new() -> Self {
        Self::default()
    }
}

impl ObjectStoreRegistry for TokqObjectStoreRegistry {
    fn register_store(&self, url: &Url, store: Arc<dyn ObjectStore>) -> Option<Arc<dyn ObjectStore>> {
        let store = crate::roots::fenced(url, store);
        self.stores.write().unwrap_or_else(|p| p.into_inner()).insert(store_url(url), store)
    }

    fn get_store(&self, url: &Url) -> DfResult<Arc<dyn ObjectStore>> {
        let k = store_url(url);
        if let Some(s) = self.stores.read().unwrap_or_else(|p| p.into_inner()).get(&k) {
            return Ok(Arc::clone(s));
        }
        let store = crate::roots::fenced(url, new_store(url).df()?);
        let mut stores = self.stores.write().unwrap_or_else(|p| p.into_inner());
        Ok(Arc::clone(stores.entry(k).or_insert(store)))
    }
}

fn new_store(url: &Url) -> Result<Arc<dyn ObjectStore>> {
    match url.scheme() {
        "file" => Ok(Arc::new(DurableLocal::new())),
        "s3" => {
            let bucket = url.host_str().ok_or_else(|| TokqError::Io {
                uri: url.to_string(),
                cause: "an s3 URI needs a bucket: s3://BUCKET/key".into(),
            })?;
            let s3 = AmazonS3Builder::from_env().with_bucket_name(bucket).build().map_err(|e| {
                TokqError::Io { uri: url.to_string(), cause: format!("cannot configure S3: {e}") }
            })?;
            Ok(Arc::new(s3))
        }
        "hf" => {
            let host = url.host_str().unwrap_or("");
            Ok(Arc::new(HubStore::new(host).map_err(|cause| TokqError::Io { uri: url.to_string(), cause })?))
        }
        "http" | "https" => {
            let options = ClientOptions::new().with_allow_http(url.scheme() == "http").with_timeout(crate::hub::REQUEST_TIMEOUT);
            let http = HttpBuilder::new().with_url(store_url(url)).with_client_options(options).build().map_err(|e| {
                TokqError::Io { uri: url.to_string(), cause: format!("cannot reach the server: {e}") }
            })?;
            Ok(Arc::new(http))
        }
        other => Err(TokqError::Io {
            uri: url.to_string(),
            cause: format!("unsupported scheme '{other}': use a local path, s3://, hf:// or https://"),
        }),
    }
}

/// Refuses an output on a store tokq only reads: the hub (`hf://`) and web servers.
pub fn writable(location: &str) -> Result<()> {
    match location.split_once("://").map(|(scheme, _)| scheme) {
        Some(scheme @ ("hf" | "http" | "https")) => Err(TokqError::Io {
            uri: location.into(),
            cause: format!("{scheme}:// is read-only, for inputs: write outputs to a local folder or s3://"),
        }),
        _ => Ok(()),
    }
}

/// Turns a user path (relative, absolute, `file://` or `s3://`) into a URL. Its scheme and host
/// pick the store; the object path comes from [`object_path`], which reads names literally.
pub fn to_url(location: &str) -> Result<Url> {
    if location.contains("://") {
        return Url::parse(location)
            .map_err(|e| TokqError::Io { uri: location.into(), cause: format!("not a URL: {e}") });
    }
    Url::from_file_path(absolute(location)?)
        .map_err(|_| TokqError::Io { uri: location.into(), cause: "not a valid local path".into() })
}

/// A location that means the same on every machine: a relative local path made absolute against
/// this process's folder (keeping a trailing `/`); URLs and absolute paths as they are. On a
/// cluster the executors write where the client means, not in their own working folders.
pub fn anchored(location: &str) -> Result<String> {
    if location.contains("://") || std::path::Path::new(location).is_absolute() {
        return Ok(location.to_string());
    }
    let path = absolute(location)?.display().to_string();
    Ok(if location.ends_with('/') && !path.ends_with('/') { path + "/" } else { path })
}

/// The object path of a location in its store, taken literally: `#`, `%`, spaces and brackets
/// are part of a name, never URL syntax (a file `a#1.jsonl` or `b%20c.jsonl` is that file, and
/// an output folder `o#1/` is written and read back as `o#1`). `_source` is the store-root and
/// this path, so it reads back the same way.
pub fn object_path(location: &str) -> Result<object_store::path::Path> {
    let bad = |cause: String| TokqError::Io { uri: location.into(), cause };
    let raw = match location.split_once("://") {
        // After the host (a bucket; empty for file://).
        Some((_, rest)) => rest.split_once('/').map_or(String::new(), |(_, p)| p.to_string()),
        None => absolute(location)?.to_str().ok_or_else(|| bad("not a UTF-8 path".into()))?.to_string(),
    };
    object_store::path::Path::parse(&raw).map_err(|e| bad(e.to_string()))
}

/// The local file a location names, for what only a file system has (folders, direct reads).
pub fn local_path(location: &str) -> Option<std::path::PathBuf> {
    match to_url(location).ok()?.scheme() {
        "file" => Some(std::path::PathBuf::from(format!("/{}", object_path(location).ok()?))),
        _ => None,
    }
}

/// An absolute local path with `.` and `..` resolved lexically, as a shell user expects (object
/// store paths reject `..`).
fn absolute(location: &str) -> Result<std::path::PathBuf> {
    let path = std::path::absolute(location)
        .map_err(|e| TokqError::Io { uri: location.into(), cause: e.to_string() })?;
    let mut clean = std::path::PathBuf::new();
    for part in path.components() {
        match part {
            std::path::Component::ParentDir => {
                clean.pop();
            }
            std::path::Component::CurDir => {}
            other => clean.push(other),
        }
    }
    Ok(clean)
}

#[cfg(test)]
mod tests {
    #[test]
    fn relative_paths_resolve_dot_dot() {
        let cwd = std::env::current_dir().unwrap();
        let url = super::to_url("../x/./y.jsonl").unwrap();
        let want = cwd.parent().unwrap().join("x/y.jsonl");
        assert_eq!(url.to_file_path().unwrap(), want);
    }

    #[test]
    fn names_are_taken_literally() {
        for (location, path) in [
            ("/d/a#1.jsonl", "d/a#1.jsonl"),
            ("file:///d/b%20c.jsonl", "d/b%20c.jsonl"),
            ("s3://bucket/x/o#1/", "x/o#1"),
            ("/d/sp ace/[1].jsonl", "d/sp ace/[1].jsonl"),
        ] {
            assert_eq!(super::object_path(location).unwrap().as_ref(), path, "{location}");
        }
        assert_eq!(super::local_path("file:///d/a#1.jsonl").unwrap(), std::path::PathBuf::from("/d/a#1.jsonl"));
        assert_eq!(super::local_path("s3://b/k"), None);
    }
}

/// Reads a whole small object (a tokenizer file), local or remote.
pub fn read_bytes(location: &str) -> Result<Vec<u8>> {
    if let Some(path) = local_path(location) {
        let mut bytes = Vec::new();
        std::io::Read::read_to_end(&mut crate::roots::open_local(location, &path)?, &mut bytes)
            .map_err(|e| TokqError::Io { uri: location.into(), cause: e.to_string() })?;
        return Ok(bytes);
    }
    crate::roots::check_location(location)?;
    let store = new_store(&to_url(location)?)?;
    let path = object_path(location)?;
    block_on(async move {
        let got = store.get(&path).await?;
        got.bytes().await
    })
    .map(|b| b.to_vec())
    .map_err(|e| TokqError::Io { uri: location.into(), cause: e.to_string() })
}

/// [`read_bytes`] for a model's weights: a local file mapped (behind the same fence), a remote
/// object read.
pub fn map_bytes(location: &str) -> Result<tokq_core::load::FileBytes> {
    match local_path(location) {
        Some(path) => tokq_core::load::FileBytes::map(&crate::roots::open_local(location, &path)?)
            .map_err(|cause| TokqError::Io { uri: location.into(), cause }),
        None => read_bytes(location).map(tokq_core::load::FileBytes::Read),
    }
}

/// The version of an object: a text that changes whenever it does (a local file's size, time and
/// inode; a remote object's size, time and entity tag), read without reading the object.
pub fn version(location: &str) -> Result<String> {
    if let Some(path) = local_path(location) {
        let meta = crate::roots::open_local(location, &path)?
            .metadata()
            .map_err(|e| TokqError::Io { uri: location.into(), cause: e.to_string() })?;
        return Ok(tokq_core::load::file_version(&meta));
    }
    crate::roots::check_location(location)?;
    let store = new_store(&to_url(location)?)?;
    let path = object_path(location)?;
    let meta = block_on(async move { store.head(&path).await })
        .map_err(|e| TokqError::Io { uri: location.into(), cause: e.to_string() })?;
    Ok(format!("{}-{}-{}", meta.size, meta.last_modified.timestamp_nanos_opt().unwrap_or_default(), meta.e_tag.unwrap_or_default()))
}

/// How tokq's functions read files (tokenizers, models, Bloom filters) in a process with the
/// engine: every store it knows, behind the node's allowed roots.
pub const LOADER: tokq_core::load::Loader = tokq_core::load::Loader { read: read_bytes, map: map_bytes, version };

/// Runs a future to completion from synchronous code (UDF bodies, table functions), inside or
/// outside a multi-threaded tokio runtime.
pub fn block_on<F: std::future::Future>(f: F) -> F::Output {
    match tokio::runtime::Handle::try_current() {
        Ok(h) if h.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread => {
            tokio::task::block_in_place(|| h.block_on(f))
        }
        _ => futures::executor::block_on(f),
    }
}

//! Inputs from the Hugging Face Hub, named as `huggingface_hub`'s `HfFileSystem`, DuckDB and Polars
//! name them: `hf://datasets/ORG/NAME[@REVISION]/PATH`, `hf://spaces/ORG/NAME/...` and
//! `hf://ORG/NAME/...` for a model. Files are read through the hub's `resolve` URLs by object_store's
//! HTTP store (ranges, retries); folders and globs are listed through the hub's tree API, a page at
//! a time. As `huggingface_hub` does, the token comes from `HF_TOKEN` or the file `hf auth login`
//! wrote (`HF_TOKEN_PATH`, else `$HF_HOME/token`, else `~/.cache/huggingface/token`), and
//! `HF_ENDPOINT` points at a mirror. The hub is an input: writes are refused.

use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use futures::stream::{self, BoxStream, StreamExt, TryStreamExt};
use object_store::http::{HttpBuilder, HttpStore};
use object_store::path::Path;
use object_store::{
    ClientOptions, CopyOptions, GetOptions, GetResult, ListResult, MultipartUpload, ObjectMeta, ObjectStore,
    PutMultipartOptions, PutOptions, PutPayload, PutResult, Result,
};
use serde::Deserialize;
use url::Url;

const STORE: &str = "HuggingFaceHub";

/// How long one request to the hub or a web server may take: a whole file of a few GB is one
/// streamed request.
pub(crate) const REQUEST_TIMEOUT: Duration = Duration::from_secs(600);

/// What an `hf://` URI's host names: the kind of repository, and for models its owner.
#[derive(Debug, Clone, PartialEq)]
enum Kind {
    Dataset,
    Space,
    /// `hf://ORG/NAME/...`: the host is the model's owner.
    Model { org: String },
}

impl Kind {
    fn of(host: &str) -> Self {
        match host {
            "datasets" => Kind::Dataset,
            "spaces" => Kind::Space,
            org => Kind::Model { org: org.to_string() },
        }
    }

    /// The segment before `ORG/NAME` in the hub's URLs (`resolve`: none for models).
    fn plural(&self) -> &'static str {
        match self {
            Kind::Dataset => "datasets",
            Kind::Space => "spaces",
            Kind::Model { .. } => "models",
        }
    }

    /// Splits a store path (`ORG/NAME@REV/PATH` for datasets and spaces, `NAME@REV/PATH` for a
    /// model) into its repository and the file inside it. A revision with `/` in it is written
    /// with `%2F` (`@refs%2Fconvert%2Fparquet`), or `@~parquet` for that branch, as DuckDB writes it.
    fn split(&self, location: &str) -> Result<InRepo> {
        let parts: Vec<&str> = location.splitn(3, '/').collect();
        let (org, name_at, rest) = match (self, parts.as_slice()) {
            (Kind::Model { org }, [name, rest @ ..]) if !name.is_empty() => (org.as_str(), *name, rest.join("/")),
            (_, [org, name, rest @ ..]) if !org.is_empty() && !name.is_empty() => (*org, *name, rest.join("/")),
            _ => {
                return Err(fail(format!(
                    "'{location}' names no repository: write hf://datasets/ORG/NAME/PATH (or hf://ORG/NAME/PATH for a model)"
                )))
            }
        };
        let (name, revision) = match name_at.split_once('@') {
            Some((name, rev)) if !rev.is_empty() => match percent_encoding::percent_decode_str(rev).decode_utf8_lossy() {
                rev if rev == "~parquet" => (name, "refs/convert/parquet".to_string()),
                rev => (name, rev.into_owned()),
            },
            Some(_) => return Err(fail(format!("'{location}': nothing after '@': write @REVISION (a branch, tag or commit)"))),
            None => (name_at, "main".to_string()),
        };
        let written = match self {
            Kind::Model { .. } => name_at.to_string(),
            _ => format!("{org}/{name_at}"),
        };
        Ok(InRepo { org: org.to_string(), name: name.to_string(), revision, written, file: rest })
    }
}

/// A location in a store, split: the repository, its revision, and the file path inside it.
#[derive(Debug, Clone, PartialEq)]
struct InRepo {
    /// The repository's owner and name.
    org: String,
    name: String,
    /// A branch, tag or commit (`main` when none is written).
    revision: String,
    /// The location up to the path inside the repository, as written (`ORG/NAME@v1`).
    written: String,
    /// The path inside the repository (empty: its root).
    file: String,
}

impl InRepo {
    /// `ORG/NAME`, as messages name it.
    fn repo(&self) -> String {
        format!("{}/{}", self.org, self.name)
    }
}

fn fail(cause: impl Into<String>) -> object_store::Error {
    object_store::Error::Generic { store: STORE, source: cause.into().into() }
}

/// The token a `huggingface_hub` user has: `HF_TOKEN`, else the login's token file.
fn token() -> Option<String> {
    let set = |v: String| Some(v.trim().to_string()).filter(|v| !v.is_empty());
    if let Some(t) = std::env::var("HF_TOKEN").ok().and_then(set) {
        return Some(t);
    }
    let file = match std::env::var_os("HF_TOKEN_PATH") {
        Some(p) => std::path::PathBuf::from(p),
        None => match std::env::var_os("HF_HOME") {
            Some(home) => std::path::PathBuf::from(home).join("token"),
            None => std::path::PathBuf::from(std::env::var_os("HOME")?).join(".cache/huggingface/token"),
        },
    };
    std::fs::read_to_string(file).ok().and_then(set)
}

/// One store per `hf://` host (`datasets`, `spaces`, or a model's owner).
#[derive(Debug)]
pub struct HubStore(Arc<Hub>);

#[derive(Debug)]
struct Hub {
    kind: Kind,
    endpoint: Url,
    /// `Authorization: Bearer TOKEN` when there is a token, sent with every request.
    auth: reqwest::header::HeaderMap,
    api: reqwest::Client,
    /// An HTTP store per repository and revision, made on first read.
    files: Mutex<HashMap<(String, String), Arc<HttpStore>>>,
}

impl fmt::Display for HubStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "HubStore({})", self.0.endpoint)
    }
}

impl HubStore {
    /// The store of the `hf://` host `host`, on `HF_ENDPOINT` (the hub when unset).
    pub fn new(host: &str) -> std::result::Result<Self, String> {
        let endpoint = std::env::var("HF_ENDPOINT").ok().filter(|e| !e.is_empty()).unwrap_or_else(|| "https://huggingface.co".into());
        let endpoint = Url::parse(&endpoint).map_err(|e| format!("HF_ENDPOINT '{endpoint}' is not a URL: {e}"))?;
        let mut auth = reqwest::header::HeaderMap::new();
        if let Some(t) = token() {
            let value = reqwest::header::HeaderValue::from_str(&format!("Bearer {t}"))
                .map_err(|_| "the HF token has characters an HTTP header cannot carry".to_string())?;
            auth.insert(reqwest::header::AUTHORIZATION, value);
        }
        let api = reqwest::Client::builder()
            .timeout(REQUEST_TIMEOUT)
            .default_headers(auth.clone())
            .build()
            .map_err(|e| format!("cannot make an HTTP client: {e}"))?;
        Ok(Self(Arc::new(Hub { kind: Kind::of(host), endpoint, auth, api, files: Mutex::default() })))
    }
}

impl Hub {
    /// `ENDPOINT/BEFORE.../ORG/NAME/VERB/REVISION`, each segment escaped (a revision's `/` too).
    fn url(&self, before: &[&str], at: &InRepo, verb: &str) -> Url {
        let mut url = self.endpoint.clone();
        if let Ok(mut path) = url.path_segments_mut() {
            path.pop_if_empty().extend(before).extend([at.org.as_str(), at.name.as_str(), verb, at.revision.as_str()]);
        }
        url
    }

    /// The HTTP store of a repository at a revision: `ENDPOINT/[datasets/]ORG/NAME/resolve/REV`.
    fn files(&self, at: &InRepo) -> Result<Arc<HttpStore>> {
        let key = (at.repo(), at.revision.clone());
        let mut files = self.files.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(s) = files.get(&key) {
            return Ok(Arc::clone(s));
        }
        let before: &[&str] = match self.kind {
            Kind::Model { .. } => &[],
            _ => &[self.kind.plural()],
        };
        let options = ClientOptions::new()
            .with_timeout(REQUEST_TIMEOUT)
            .with_allow_http(self.endpoint.scheme() == "http")
            .with_default_headers(self.auth.clone());
        let store = Arc::new(HttpBuilder::new().with_url(self.url(before, at, "resolve").as_str()).with_client_options(options).build()?);
        files.insert(key, Arc::clone(&store));
        Ok(store)
    }

    /// Every file under `at` (recursive), from the tree API, a page at a time.
    async fn tree(&self, at: InRepo) -> Result<Vec<ObjectMeta>> {
        let mut first = self.url(&["api", self.kind.plural()], &at, "tree");
        if let Ok(mut path) = first.path_segments_mut() {
            path.extend(at.file.split('/').filter(|s| !s.is_empty()));
        }
        first.query_pairs_mut().append_pair("recursive", "true").append_pair("expand", "false");
        let mut next = Some(first);
        let mut found = Vec::new();
        while let Some(url) = next.take() {
            let response = self.api.get(url.clone()).send().await.map_err(|e| fail(format!("cannot list {url}: {e}")))?;
            match response.status().as_u16() {
                200 => {}
                // No such folder: nothing found; the caller says what was looked for.
                404 => return Ok(found),
                status @ (401 | 403) => return Err(fail(refused(&at.repo(), Some(status)))),
                status => return Err(fail(format!("cannot list {url}: the hub answered HTTP {status}"))),
            }
            next = next_page(response.headers());
            let body = response.bytes().await.map_err(|e| fail(format!("cannot read the listing of {url}: {e}")))?;
            let page: Vec<Entry> = serde_json::from_slice(&body).map_err(|e| fail(format!("cannot read the listing of {url}: {e}")))?;
            for e in page.into_iter().filter(|e| e.kind == "file") {
                let location = Path::parse(format!("{}/{}", at.written, e.path)).map_err(|e| fail(e.to_string()))?;
                let (size, e_tag) = match e.lfs {
                    Some(lfs) => (lfs.size, lfs.oid),
                    None => (e.size, e.oid),
                };
                found.push(ObjectMeta { location, last_modified: Default::default(), size, e_tag: Some(e_tag), version: None });
            }
        }
        Ok(found)
    }
}

/// Why the hub refused a repository (with the HTTP status when it is known), and what to do.
fn refused(repo: &str, status: Option<u16>) -> String {
    let status = status.map(|s| format!(" (HTTP {s})")).unwrap_or_default();
    format!(
        "the hub refused {repo}{status}: a private or gated repository needs a token with access: \
         set HF_TOKEN or run `hf auth login`, and accept the dataset's terms on its page"
    )
}

/// The tree API's `Link: <URL>; rel="next"`.
fn next_page(headers: &reqwest::header::HeaderMap) -> Option<Url> {
    let link = headers.get(reqwest::header::LINK)?.to_str().ok()?;
    link.split(',').find(|l| l.contains("rel=\"next\"")).and_then(|l| {
        let url = l.split_once('<')?.1.split_once('>')?.0;
        Url::parse(url).ok()
    })
}

/// One entry of the tree API.
#[derive(Deserialize)]
struct Entry {
    #[serde(rename = "type")]
    kind: String,
    path: String,
    #[serde(default)]
    size: u64,
    #[serde(default)]
    oid: String,
    lfs: Option<Lfs>,
}

#[derive(Deserialize)]
struct Lfs {
    oid: String,
    size: u64,
}

fn read_only() -> object_store::Error {
    fail("hf:// is read-only: write outputs to a local folder or s3://, and upload them with `hf upload`")
}

#[async_trait]
impl ObjectStore for HubStore {
    async fn put_opts(&self, _: &Path, _: PutPayload, _: PutOptions) -> Result<PutResult> {
        Err(read_only())
    }

    async fn put_multipart_opts(&self, _: &Path, _: PutMultipartOptions) -> Result<Box<dyn MultipartUpload>> {
        Err(read_only())
    }

    async fn get_opts(&self, location: &Path, options: GetOptions) -> Result<GetResult> {
        let at = self.0.kind.split(location.as_ref())?;
        let file = Path::parse(&at.file).map_err(|e| fail(e.to_string()))?;
        let mut got = self.0.files(&at)?.get_opts(&file, options).await.map_err(|e| match e {
            object_store::Error::Unauthenticated { .. } | object_store::Error::PermissionDenied { .. } => {
                fail(refused(&at.repo(), None))
            }
            other => other,
        })?;
        // The HTTP store names the file by its path in the repository; callers expect theirs.
        got.meta.location = location.clone();
        Ok(got)
    }

    fn delete_stream(&self, locations: BoxStream<'static, Result<Path>>) -> BoxStream<'static, Result<Path>> {
        locations.map(|_| Err(read_only())).boxed()
    }

    fn list(&self, prefix: Option<&Path>) -> BoxStream<'static, Result<ObjectMeta>> {
        let at = self.0.kind.split(prefix.map(|p| p.as_ref()).unwrap_or(""));
        let this = Arc::clone(&self.0);
        stream::once(async move { this.tree(at?).await.map(|found| stream::iter(found.into_iter().map(Ok))) })
            .try_flatten()
            .boxed()
    }

    async fn list_with_delimiter(&self, prefix: Option<&Path>) -> Result<ListResult> {
        let at = self.0.kind.split(prefix.map(|p| p.as_ref()).unwrap_or(""))?;
        // The tree API lists recursively: files one level below the prefix are its objects, the
        // first folder of every deeper one a common prefix.
        let depth = at.written.split('/').count() + at.file.split('/').filter(|s| !s.is_empty()).count();
        let (mut folders, mut objects) = (std::collections::BTreeSet::new(), Vec::new());
        for meta in self.0.tree(at).await? {
            let parts: Vec<_> = meta.location.parts().collect();
            if parts.len() == depth + 1 {
                objects.push(meta);
            } else {
                folders.insert(Path::from_iter(parts.into_iter().take(depth + 1)));
            }
        }
        Ok(ListResult { common_prefixes: folders.into_iter().collect(), objects })
    }

    async fn copy_opts(&self, _: &Path, _: &Path, _: CopyOptions) -> Result<()> {
        Err(read_only())
    }
}

#[cfg(test)]
mod tests {
    use super::{InRepo, Kind};

    fn split(kind: &Kind, location: &str) -> InRepo {
        kind.split(location).unwrap()
    }

    #[test]
    fn locations_split_as_huggingface_hub_writes_them() {
        let at = split(&Kind::Dataset, "HuggingFaceFW/fineweb/data/CC-MAIN-2024-10/000_00000.parquet");
        assert_eq!((at.repo().as_str(), at.revision.as_str()), ("HuggingFaceFW/fineweb", "main"));
        assert_eq!((at.written.as_str(), at.file.as_str()), ("HuggingFaceFW/fineweb", "data/CC-MAIN-2024-10/000_00000.parquet"));
        let at = split(&Kind::Dataset, "org/name@refs%2Fconvert%2Fparquet/default/train");
        assert_eq!((at.revision.as_str(), at.written.as_str()), ("refs/convert/parquet", "org/name@refs%2Fconvert%2Fparquet"));
        assert_eq!(split(&Kind::Dataset, "org/name@~parquet").revision, "refs/convert/parquet");
        assert_eq!(split(&Kind::Dataset, "org/name@%7Eparquet").revision, "refs/convert/parquet");
        assert_eq!(split(&Kind::Dataset, "org/name").file, "");
        let model = Kind::of("openai-community");
        let at = split(&model, "gpt2@v1/tokenizer.json");
        assert_eq!((at.repo().as_str(), at.revision.as_str(), at.file.as_str()), ("openai-community/gpt2", "v1", "tokenizer.json"));
        assert_eq!(Kind::of("spaces"), Kind::Space);
    }

    #[test]
    fn a_location_without_a_repository_says_how_to_write_one() {
        for bad in ["", "org", "org/"] {
            let e = Kind::Dataset.split(bad).unwrap_err().to_string();
            assert!(e.contains("hf://datasets/ORG/NAME/PATH"), "{bad}: {e}");
        }
        assert!(Kind::Dataset.split("org/name@/x").unwrap_err().to_string().contains("@REVISION"));
    }
}

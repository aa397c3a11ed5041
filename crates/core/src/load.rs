//! Where tokenizer files come from. The core reads local paths itself; a host that knows more
//! schemes (the engine's object stores: `s3://`) installs its own loader once per process, so the
//! core stays free of any storage or query-engine dependency.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, LazyLock, Mutex, OnceLock};

use crate::error::{Result, TokqError};

/// How a host reads objects: whole (a tokenizer file, a model), and the version of one (a file
/// the run itself rewrites, such as a Bloom filter, must not be served from a cache of its last
/// content).
#[derive(Clone, Copy)]
pub struct Loader {
    /// Reads the whole object at a URI or path.
    pub read: fn(&str) -> Result<Vec<u8>>,
    /// The whole object at a URI or path, mapped where it is a local file (model weights).
    pub map: fn(&str) -> Result<FileBytes>,
    /// A text that changes whenever the object does (size, modification time, entity tag).
    pub version: fn(&str) -> Result<String>,
}

static LOADER: OnceLock<Loader> = OnceLock::new();

/// Installs the process's loader. The first call wins: every host installs the same one, and a
/// tokenizer cached under one loader must not be re-read through another.
pub fn set_loader(loader: Loader) {
    let _ = LOADER.set(loader);
}

/// Reads a tokenizer file through the installed loader, or from the local file system.
pub fn read_bytes(uri: &str) -> Result<Vec<u8>> {
    match LOADER.get() {
        Some(l) => (l.read)(uri),
        None => read_local(uri),
    }
}

/// The version of the object at a URI or path, through the installed loader, or of a local file.
pub fn version(uri: &str) -> Result<String> {
    match LOADER.get() {
        Some(l) => (l.version)(uri),
        None => local_version(uri),
    }
}

/// Reads one file of a local model folder through the installed loader, so a host's fence (a
/// cluster node's allowed roots) holds for every file of the folder, links included; the error is
/// the cause alone, for a message that names the file itself.
pub fn read_file(path: &std::path::Path) -> std::result::Result<Vec<u8>, String> {
    read_bytes(&path.to_string_lossy()).map_err(cause)
}

/// [`read_file`] for a large file read once (a model's weights): mapped from the page cache
/// where it is local, so the bytes are not copied into the heap before they are converted.
pub fn map_file(path: &std::path::Path) -> std::result::Result<FileBytes, String> {
    let uri = path.to_string_lossy();
    match LOADER.get() {
        Some(l) => (l.map)(&uri),
        None => map_local(&uri),
    }
    .map_err(cause)
}

/// An I/O error's cause alone, for a message that names the file itself.
fn cause(e: TokqError) -> String {
    match e {
        TokqError::Io { cause, .. } => cause,
        other => other.to_string(),
    }
}

/// A file's bytes: mapped ([`FileBytes::map`]) or read into memory (a remote object).
pub enum FileBytes {
    /// A local file, mapped read-only.
    Mapped(memmap2::Mmap),
    /// An object read whole (a remote store), or an empty file.
    Read(Vec<u8>),
}

impl FileBytes {
    /// Maps an opened file read-only. Its pages are read on first touch and shared with every
    /// other process that maps or reads it. The caller reads it through once and keeps what it
    /// converted, not the map: a file truncated under a live map faults on access (SIGBUS), a
    /// window this keeps to the load.
    pub fn map(file: &std::fs::File) -> std::result::Result<Self, String> {
        let meta = file.metadata().map_err(|e| e.to_string())?;
        if !meta.is_file() || meta.len() == 0 {
            // mmap(2) refuses an empty length and what is not a plain file (a pipe, a folder):
            // those are read, with the reading's own error ("Is a directory").
            let mut bytes = Vec::new();
            std::io::Read::read_to_end(&mut &*file, &mut bytes).map_err(|e| e.to_string())?;
            return Ok(Self::Read(bytes));
        }
        // SAFETY: the map is read-only and dropped once its bytes are converted; the one
        // hazard, another process truncating the file meanwhile, is the same one safetensors'
        // own loaders accept.
        let map = unsafe { memmap2::Mmap::map(file) }.map_err(|e| e.to_string())?;
        // Read ahead: the whole file is about to be read through in order.
        let _ = map.advise(memmap2::Advice::Sequential);
        Ok(Self::Mapped(map))
    }
}

impl std::ops::Deref for FileBytes {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        match self {
            Self::Mapped(m) => m,
            Self::Read(v) => v,
        }
    }
}

/// How a model argument pins its weights: `PATH#sha256=HEX`.
const PIN: &str = "#sha256=";

/// A model argument's path and, when it is pinned (`PATH#sha256=HEX`), the sha256 its weights
/// must have. fastText files carry no checksum: a damaged one loads and answers wrong labels.
pub fn model_spec(spec: &str) -> std::result::Result<(&str, Option<&str>), String> {
    match spec.rsplit_once(PIN) {
        None => Ok((spec, None)),
        Some((path, hex)) if hex.len() == 64 && hex.bytes().all(|b| b.is_ascii_hexdigit()) => Ok((path, Some(hex))),
        Some((_, hex)) => Err(format!("'{hex}' is not a sha256: a pin is #sha256= and the file's 64 hex digits (sha256sum FILE)")),
    }
}

/// Models this process loaded, with the sha256 of their weights.
static LOADED: Mutex<BTreeMap<String, String>> = Mutex::new(BTreeMap::new());

/// Checks the weights `bytes` of the model at `path` against its pin, and records their hash.
pub fn verify_weights(path: &str, bytes: &[u8], pin: Option<&str>) -> std::result::Result<(), String> {
    let got = crate::tokenize::sha256_hex(bytes);
    if let Some(want) = pin.filter(|want| !want.eq_ignore_ascii_case(&got)) {
        return Err(format!("its sha256 is {got}, not the pinned {want}: the file is damaged or another one; download it again, or pin the new hash"));
    }
    LOADED.lock().unwrap_or_else(|p| p.into_inner()).insert(path.to_string(), got);
    Ok(())
}

/// Every model this process has loaded (fastText files, neural model folders), with the sha256
/// of its weights (`model.safetensors` for a folder).
pub fn loaded_models() -> BTreeMap<String, String> {
    LOADED.lock().unwrap_or_else(|p| p.into_inner()).clone()
}

/// The loader a host without object stores gets: plain paths and `file://` URIs.
fn read_local(uri: &str) -> Result<Vec<u8>> {
    std::fs::read(local(uri)?).map_err(|e| TokqError::Io { uri: uri.to_string(), cause: e.to_string() })
}

/// [`read_local`], mapped.
fn map_local(uri: &str) -> Result<FileBytes> {
    let io = |cause: String| TokqError::Io { uri: uri.to_string(), cause };
    let file = std::fs::File::open(local(uri)?).map_err(|e| io(e.to_string()))?;
    FileBytes::map(&file).map_err(io)
}

/// A local file's version: its size, modification time and inode (a file replaced by a rename
/// has a new inode even within the clock's resolution).
fn local_version(uri: &str) -> Result<String> {
    let meta = std::fs::metadata(local(uri)?).map_err(|e| TokqError::Io { uri: uri.to_string(), cause: e.to_string() })?;
    Ok(file_version(&meta))
}

/// The version [`local_version`] gives an opened file's metadata.
pub fn file_version(meta: &std::fs::Metadata) -> String {
    use std::os::unix::fs::MetadataExt;
    format!("{}-{}.{}-{}", meta.len(), meta.mtime(), meta.mtime_nsec(), meta.ino())
}

/// A plain path or `file://` URI as a path; other schemes are refused.
fn local(uri: &str) -> Result<&str> {
    let path = uri.strip_prefix("file://").unwrap_or(uri);
    if path.contains("://") {
        return Err(TokqError::Io {
            uri: uri.to_string(),
            cause: "this process reads local files only: run it through tokq's engine for s3://".into(),
        });
    }
    Ok(path)
}

/// Files loaded once per process and shared (tokenizers, models), by URI or spec. The functions
/// that use them stay stateless, so they run on any executor; each process pays the load once.
pub struct Cache<T>(LazyLock<Mutex<HashMap<String, Arc<T>>>>);

impl<T> Cache<T> {
    /// An empty cache, for a `static`.
    pub const fn new() -> Self {
        Self(LazyLock::new(Default::default))
    }

    /// The value under `key`, loaded by `load` on first use; a failed load is not cached.
    pub fn get_or_load(&self, key: &str, load: impl FnOnce(&str) -> Result<T>) -> Result<Arc<T>> {
        let mut cache = self.0.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(v) = cache.get(key) {
            return Ok(Arc::clone(v));
        }
        let v = Arc::new(load(key)?);
        cache.insert(key.to_string(), Arc::clone(&v));
        Ok(v)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_mapped_file_reads_as_its_bytes() {
        let dir = tempfile::tempdir().unwrap();
        let (full, empty) = (dir.path().join("w.safetensors"), dir.path().join("empty"));
        let bytes: Vec<u8> = (0..100_000u32).map(|i| (i * 7 % 251) as u8).collect();
        std::fs::write(&full, &bytes).unwrap();
        std::fs::write(&empty, b"").unwrap();
        assert!(matches!(map_file(&full).unwrap(), FileBytes::Mapped(_)));
        assert_eq!(&*map_file(&full).unwrap(), &bytes[..]);
        assert!(map_file(&empty).unwrap().is_empty());
        let missing = map_file(&dir.path().join("nope")).err().unwrap();
        assert!(missing.contains("No such file"), "{missing}");
        let folder = map_file(dir.path()).err().unwrap();
        assert!(folder.contains("Is a directory"), "{folder}");
    }
}

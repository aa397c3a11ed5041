//! The local file store, made durable: `LocalFileSystem` writes a file and renames it into place
//! but never calls `fsync`, so after a power loss or a kernel crash a renamed part file can be
//! empty, or a manifest can name files whose data never reached the disk. [`DurableLocal`] syncs
//! every file it writes before the write returns, and the folder that a new name appears in, so
//! that tokq's order of commits (parts, then the journal entry, then the manifest) holds on disk
//! and not only in the page cache. Reads, listings and deletes pass through unchanged: a delete
//! reaches the disk with the next sync of its folder, which the manifest's write makes.

use std::fmt;
use std::ops::Range;
use std::path::PathBuf;

use async_trait::async_trait;
use bytes::Bytes;
use futures::stream::BoxStream;
use object_store::local::LocalFileSystem;
use object_store::path::Path;
use object_store::{
    CopyOptions, GetOptions, GetResult, ListResult, MultipartUpload, ObjectMeta, ObjectStore, PutMultipartOptions,
    PutOptions, PutPayload, PutResult, RenameOptions, Result, UploadPart,
};

/// [`LocalFileSystem`] with every write synced to disk (see the module documentation).
#[derive(Debug, Default)]
pub struct DurableLocal {
    inner: LocalFileSystem,
}

impl DurableLocal {
    pub fn new() -> Self {
        Self::default()
    }
}

impl fmt::Display for DurableLocal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "DurableLocal({})", self.inner)
    }
}

/// Syncs a file's data, then the folder holding its name.
async fn sync_file(file: PathBuf) -> Result<()> {
    blocking(move || {
        std::fs::File::open(&file)?.sync_all()?;
        sync_parent(&file)
    })
    .await
}

/// Syncs the folder a name was added to or moved into.
async fn sync_name(file: PathBuf) -> Result<()> {
    blocking(move || sync_parent(&file)).await
}

fn sync_parent(file: &std::path::Path) -> std::io::Result<()> {
    match file.parent() {
        Some(dir) => std::fs::File::open(dir)?.sync_all(),
        None => Ok(()),
    }
}

async fn blocking(f: impl FnOnce() -> std::io::Result<()> + Send + 'static) -> Result<()> {
    let failed = |source: Box<dyn std::error::Error + Send + Sync>| object_store::Error::Generic { store: "DurableLocal", source };
    tokio::task::spawn_blocking(f).await.map_err(|e| failed(Box::new(e)))?.map_err(|e| failed(Box::new(e)))
}

/// A local multipart upload that syncs the file once it is complete.
#[derive(Debug)]
struct DurableUpload {
    inner: Box<dyn MultipartUpload>,
    file: PathBuf,
}

#[async_trait]
impl MultipartUpload for DurableUpload {
    fn put_part(&mut self, data: PutPayload) -> UploadPart {
        self.inner.put_part(data)
    }

    async fn complete(&mut self) -> Result<PutResult> {
        let done = self.inner.complete().await?;
        sync_file(self.file.clone()).await?;
        Ok(done)
    }

    async fn abort(&mut self) -> Result<()> {
        self.inner.abort().await
    }
}

#[async_trait]
impl ObjectStore for DurableLocal {
    async fn put_opts(&self, location: &Path, payload: PutPayload, opts: PutOptions) -> Result<PutResult> {
        let done = self.inner.put_opts(location, payload, opts).await?;
        sync_file(self.inner.path_to_filesystem(location)?).await?;
        Ok(done)
    }

    async fn put_multipart_opts(&self, location: &Path, opts: PutMultipartOptions) -> Result<Box<dyn MultipartUpload>> {
        let inner = self.inner.put_multipart_opts(location, opts).await?;
        Ok(Box::new(DurableUpload { inner, file: self.inner.path_to_filesystem(location)? }))
    }

    async fn get_opts(&self, location: &Path, options: GetOptions) -> Result<GetResult> {
        self.inner.get_opts(location, options).await
    }

    async fn get_ranges(&self, location: &Path, ranges: &[Range<u64>]) -> Result<Vec<Bytes>> {
        self.inner.get_ranges(location, ranges).await
    }

    fn delete_stream(&self, locations: BoxStream<'static, Result<Path>>) -> BoxStream<'static, Result<Path>> {
        self.inner.delete_stream(locations)
    }

    fn list(&self, prefix: Option<&Path>) -> BoxStream<'static, Result<ObjectMeta>> {
        self.inner.list(prefix)
    }

    fn list_with_offset(&self, prefix: Option<&Path>, offset: &Path) -> BoxStream<'static, Result<ObjectMeta>> {
        self.inner.list_with_offset(prefix, offset)
    }

    async fn list_with_delimiter(&self, prefix: Option<&Path>) -> Result<ListResult> {
        self.inner.list_with_delimiter(prefix).await
    }

    async fn copy_opts(&self, from: &Path, to: &Path, options: CopyOptions) -> Result<()> {
        self.inner.copy_opts(from, to, options).await?;
        sync_file(self.inner.path_to_filesystem(to)?).await
    }

    async fn rename_opts(&self, from: &Path, to: &Path, options: RenameOptions) -> Result<()> {
        self.inner.rename_opts(from, to, options).await?;
        // The data was synced when it was written; the new name needs its folder synced.
        sync_name(self.inner.path_to_filesystem(to)?).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use object_store::ObjectStoreExt;

    #[tokio::test]
    async fn writes_and_renames_behave_as_the_plain_local_store() {
        let d = tempfile::tempdir().unwrap();
        let store = DurableLocal::new();
        let path = |name: &str| Path::from_absolute_path(d.path().join(name)).unwrap();
        store.put(&path("a/x.tmp"), PutPayload::from_static(b"abc")).await.unwrap();
        let mut up = store.put_multipart(&path("a/y.tmp")).await.unwrap();
        up.put_part(PutPayload::from_static(b"de")).await.unwrap();
        up.complete().await.unwrap();
        store.rename(&path("a/x.tmp"), &path("b/x")).await.unwrap();
        store.copy(&path("a/y.tmp"), &path("b/y")).await.unwrap();
        assert_eq!(std::fs::read(d.path().join("b/x")).unwrap(), b"abc");
        assert_eq!(std::fs::read(d.path().join("b/y")).unwrap(), b"de");
        assert!(!d.path().join("a/x.tmp").exists());
    }
}

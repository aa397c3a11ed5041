//! A tokenizer compiled for tokq's own encoder, kept on disk under the sha256 of the file it
//! came from, so that the next process skips the file's parse.
//!
//! Reading Llama-3's 17 MB `tokenizer.json` is about 0.12 s on one core (JSON 30%, a vocabulary
//! lookup for each of 280k merges' three tokens 20%, converting tokens from their byte-level
//! spelling 7%): a third of a run over a few megabytes. The compiled form holds what that work
//! ends in, each merge already as ids, in a little-endian layout read in place:
//!
//! ```text
//! "tokq-bpe" u32:FORMAT
//! u8 split  u8 normalizer  u8 unicode  u8 whole_first  u8 chars (0 byte-level, 1 SentencePiece)
//! u8 byte_fallback  u8 fuse_unk  u8 has_unk  u32 unk
//! u32 n, n x (u32 id, u32 len, bytes)        tokens, by id
//! u32 n, n x (u32 left, right, rank, merged) merges, by rank
//! 3 x (u32 n, n x (u32 id, u32 len, bytes))  added raw, added normalized, named
//! u64 xxh3 of every byte before it
//! ```
//!
//! The file name carries [`FORMAT`] and tokq's version, so a tokq that reads a file differently
//! never takes another's compilation. A file that fails its checksum or its layout is ignored
//! and written again: the cache can only save time, never change an id.

use std::borrow::Cow;
use std::path::{Path, PathBuf};

use rustc_hash::FxHashMap;
use xxhash_rust::xxh3::xxh3_64;

use super::bpe::{BpeModel, Parts, Unknown};
use super::classes::Classes;
use super::{AddedTokens, FastBpe, Normalizer, Split, Unicode};
use crate::tokenize::spec::SplitPattern;

/// The layout's version: raise it whenever the layout, or what a file compiles to, changes.
pub const FORMAT: u32 = 1;

const MAGIC: &[u8; 8] = b"tokq-bpe";

/// Each setting's values in the order of their codes in the layout: one list per setting, read
/// both ways, so that writing and reading cannot disagree (a new value must be added here; one
/// missing is written as a code no list has, so its files are refused, never misread).
const SPLITS: [Split; 5] = [
    Split::Regex(SplitPattern::R50k),
    Split::Regex(SplitPattern::Cl100k),
    Split::Regex(SplitPattern::O200k),
    Split::Regex(SplitPattern::Qwen),
    Split::Metaspace,
];
const NORMALIZERS: [Normalizer; 3] = [Normalizer::None, Normalizer::Nfc, Normalizer::Metaspace];
const UNICODES: [Unicode; 2] = [Unicode::Tiktoken, Unicode::Tokenizers];

/// The code of `value` in `list`.
fn code<T: PartialEq>(list: &[T], value: &T) -> u8 {
    list.iter().position(|v| v == value).map_or(u8::MAX, |i| i as u8)
}

/// The value of `code` in `list`, or which setting has no such value.
fn value<T: Copy>(list: &[T], code: u8, setting: &str) -> Result<T, String> {
    list.get(code as usize).copied().ok_or_else(|| format!("{setting} {code} unknown"))
}

/// The folder compiled tokenizers are kept in: `$TOKQ_CACHE_DIR/tokenizers`, else
/// `$XDG_CACHE_HOME/tokq/tokenizers`, else `$HOME/.cache/tokq/tokenizers`; none when
/// `TOKQ_CACHE_DIR` is `off` or there is no home.
pub fn cache_dir() -> Option<PathBuf> {
    let var = |name| std::env::var_os(name).filter(|v| !v.is_empty()).map(PathBuf::from);
    let root = match var("TOKQ_CACHE_DIR") {
        Some(dir) if dir.as_os_str() == "off" => return None,
        Some(dir) => dir,
        None => var("XDG_CACHE_HOME").or_else(|| var("HOME").map(|h| h.join(".cache")))?.join("tokq"),
    };
    Some(root.join("tokenizers"))
}

/// tokq's own encoder for a tokenizer file, from its compiled form in the cache under `key` (the
/// file's sha256, and what else the encoder depends on) when one is there, from `parse` (then
/// written to the cache) otherwise; with what happened to the cache, for `tokq tokenizer`. The
/// `unicode` tables are built beside the read or the parse, on a second core where there is one:
/// loading is serial time before any partition starts.
pub fn load_or_compile(
    key: &str,
    unicode: Unicode,
    parse: impl FnOnce() -> Result<FastBpe, String>,
) -> (Result<FastBpe, String>, Option<String>) {
    let path = cache_dir().map(|dir| path(&dir, key));
    std::thread::scope(|s| {
        s.spawn(|| Classes::of(unicode));
        let Some(path) = path else { return (parse(), None) };
        let shown = path.display();
        let stale = match read(&path) {
            Ok(t) => return (Ok(t), Some(format!("read {shown}"))),
            Err(why) => path.exists().then(|| format!(" over one that was not usable ({why})")).unwrap_or_default(),
        };
        let own = parse();
        let note = own.as_ref().ok().map(|t| match write(&path, t) {
            Ok(()) => format!("written to {shown}{stale}"),
            Err(e) => format!("not written to {shown}: {e}"),
        });
        (own, note)
    })
}

/// Where the compilation under `key` (the file's sha256, and what else the encoder depends on)
/// is kept in `dir`.
pub fn path(dir: &Path, key: &str) -> PathBuf {
    dir.join(format!("{key}.tokq-bpe-{FORMAT}-{}", env!("CARGO_PKG_VERSION")))
}

/// The encoder compiled at `path`, or why it cannot be used (missing, damaged, another layout).
pub fn read(path: &Path) -> Result<FastBpe, String> {
    let bytes = std::fs::read(path).map_err(|e| e.to_string())?;
    decode(&bytes)
}

/// Writes `t`'s compilation to `path`, whole or not at all: a temporary file beside it is
/// renamed into place, so a process reading it meanwhile sees the old file or the new one.
pub fn write(path: &Path, t: &FastBpe) -> std::io::Result<()> {
    let dir = path.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir)?;
    let mut tmp = tempfile::NamedTempFile::new_in(dir)?;
    std::io::Write::write_all(&mut tmp, &encode(t))?;
    tmp.persist(path).map_err(|e| e.error)?;
    Ok(())
}

/// `t` in the layout above.
pub fn encode(t: &FastBpe) -> Vec<u8> {
    let parts = t.model.parts();
    let mut out = Vec::with_capacity(parts.tokens.len() * 16 + parts.merges.len() * 16 + 64);
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&FORMAT.to_le_bytes());
    let unknown = parts.chars.unwrap_or_default();
    out.extend_from_slice(&[
        code(&SPLITS, &t.split),
        code(&NORMALIZERS, &t.normalizer),
        code(&UNICODES, &t.unicode),
        parts.whole_first as u8,
        parts.chars.is_some() as u8,
        unknown.byte_fallback as u8,
        unknown.fuse_unk as u8,
        unknown.unk.is_some() as u8,
    ]);
    put(&mut out, unknown.unk.unwrap_or(0));
    put_strings(&mut out, parts.tokens.iter().map(|(t, id)| (&t[..], *id)));
    put(&mut out, parts.merges.len() as u32);
    for merge in &parts.merges {
        merge.iter().for_each(|&v| put(&mut out, v));
    }
    let [raw, normalized] = t.added.lists();
    put_strings(&mut out, raw.into_iter().map(|(s, id)| (s.as_bytes(), id)));
    put_strings(&mut out, normalized.into_iter().map(|(s, id)| (s.as_bytes(), id)));
    let mut named: Vec<(&[u8], u32)> = t.named.iter().map(|(s, &id)| (s.as_bytes(), id)).collect();
    named.sort_unstable();
    put_strings(&mut out, named.into_iter());
    let sum = xxh3_64(&out);
    out.extend_from_slice(&sum.to_le_bytes());
    out
}

/// The encoder `bytes` (made by [`encode`]) describes.
pub fn decode(bytes: &[u8]) -> Result<FastBpe, String> {
    let (body, sum) = bytes.split_last_chunk::<8>().ok_or("shorter than its checksum")?;
    if xxh3_64(body) != u64::from_le_bytes(*sum) {
        return Err("checksum mismatch".into());
    }
    let mut r = Reader(body);
    if r.take(MAGIC.len())? != MAGIC || r.u32()? != FORMAT {
        return Err("not this tokq's compiled-tokenizer layout".into());
    }
    let flags = r.take(8)?;
    let [split, normalizer, unicode, whole_first, chars, byte_fallback, fuse_unk, has_unk] = flags.try_into().expect("8 bytes");
    let unk = r.u32()?;
    let split = value(&SPLITS, split, "split")?;
    let normalizer = value(&NORMALIZERS, normalizer, "normalizer")?;
    let unicode = value(&UNICODES, unicode, "Unicode tables")?;
    let tokens = r.strings()?.into_iter().map(|(t, id)| (Cow::Borrowed(t), id)).collect();
    let n = r.u32()? as usize;
    if n > r.0.len() / 16 {
        return Err("truncated".into());
    }
    let merges = (0..n).map(|_| Ok([r.u32()?, r.u32()?, r.u32()?, r.u32()?])).collect::<Result<Vec<_>, String>>()?;
    let text = |list: Vec<(&[u8], u32)>| -> Result<Vec<(String, u32)>, String> {
        list.into_iter().map(|(s, id)| Ok((std::str::from_utf8(s).map_err(|e| e.to_string())?.to_string(), id))).collect()
    };
    let (raw, normalized, named) = (text(r.strings()?)?, text(r.strings()?)?, text(r.strings()?)?);
    if !r.0.is_empty() {
        return Err("bytes after the last section".into());
    }
    let chars = (chars == 1).then_some(Unknown { byte_fallback: byte_fallback == 1, unk: (has_unk == 1).then_some(unk), fuse_unk: fuse_unk == 1 });
    let model = BpeModel::from_parts(Parts { tokens, merges, chars, whole_first: whole_first == 1 })?;
    let named: FxHashMap<String, u32> = named.into_iter().collect();
    Ok(FastBpe::new(model, split, unicode, normalizer, AddedTokens::new(raw, normalized)?).with_named_tokens(named))
}

fn put(out: &mut Vec<u8>, v: u32) {
    out.extend_from_slice(&v.to_le_bytes());
}

fn put_strings<'a>(out: &mut Vec<u8>, list: impl ExactSizeIterator<Item = (&'a [u8], u32)>) {
    put(out, list.len() as u32);
    for (s, id) in list {
        put(out, id);
        put(out, s.len() as u32);
        out.extend_from_slice(s);
    }
}

/// The unread rest of a compiled file.
struct Reader<'a>(&'a [u8]);

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], String> {
        let (head, rest) = self.0.split_at_checked(n).ok_or("truncated")?;
        self.0 = rest;
        Ok(head)
    }

    fn u32(&mut self) -> Result<u32, String> {
        Ok(u32::from_le_bytes(self.take(4)?.try_into().expect("4 bytes")))
    }

    fn strings(&mut self) -> Result<Vec<(&'a [u8], u32)>, String> {
        let n = self.u32()? as usize;
        // Each entry is at least 8 bytes: a damaged count fails here, not in an allocation.
        if n > self.0.len() / 8 {
            return Err("truncated".into());
        }
        (0..n).map(|_| {
            let id = self.u32()?;
            let len = self.u32()? as usize;
            Ok((self.take(len)?, id))
        }).collect()
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;
    use crate::tokenize::fast::tests::sentencepiece;
    use crate::tokenize::Encode;

    /// Byte-level: a toy rank table, NFC, raw and normalized added tokens, a named token.
    fn byte_level() -> FastBpe {
        let mut ranks: Vec<(Vec<u8>, u32)> = (0..=255u8).map(|b| (vec![b], b as u32)).collect();
        for (i, t) in ["ab", "bc", "abc", " a", " ab", "é", "ca"].iter().enumerate() {
            ranks.push((t.as_bytes().to_vec(), 256 + i as u32));
        }
        let added = AddedTokens::new(vec![("<|end|>".into(), 300)], vec![("café".into(), 301)]).unwrap();
        let model = BpeModel::from_ranks(ranks).unwrap();
        FastBpe::new(model, Split::Regex(SplitPattern::Cl100k), Unicode::Tiktoken, Normalizer::Nfc, added)
            .with_named_tokens([("<|pad|>".to_string(), 302)].into_iter().collect())
    }

    const TEXTS: [&str; 6] = ["", "abc ab  cab", "cafe\u{301} café<|end|>abc", "a<|end|><|end|>b", "zzz ab ☃ b a", "<s>ab<s> a b"];

    #[test]
    fn a_compiled_encoder_gives_the_ids_of_the_one_it_was_compiled_from() {
        for t in [byte_level(), sentencepiece()] {
            let bytes = encode(&t);
            let back = decode(&bytes).unwrap();
            for text in TEXTS {
                assert_eq!(back.encode(text).unwrap(), t.encode(text).unwrap(), "{text:?}");
            }
            assert_eq!(back.token_id("<|pad|>"), t.token_id("<|pad|>"));
            assert_eq!(back.spelled_lengths(), t.spelled_lengths());
            // The same encoder compiles to the same bytes, whatever the order of its hash maps.
            assert_eq!(encode(&back), bytes);
        }
    }

    #[test]
    fn a_damaged_file_is_refused_never_read() {
        let bytes = encode(&byte_level());
        for at in (0..bytes.len()).step_by(7) {
            let mut damaged = bytes.clone();
            damaged[at] ^= 0x10;
            assert_eq!(decode(&damaged).err().as_deref(), Some("checksum mismatch"), "byte {at}");
        }
        for len in (0..bytes.len()).step_by(5) {
            assert!(decode(&bytes[..len]).is_err(), "{len} bytes");
        }
        // A wrong layout under a right checksum: a split code no tokq writes.
        let mut body = bytes[..bytes.len() - 8].to_vec();
        body[12] = 9;
        let sum = xxh3_64(&body);
        body.extend_from_slice(&sum.to_le_bytes());
        assert_eq!(decode(&body).err().as_deref(), Some("split 9 unknown"));
    }

    #[test]
    fn a_file_is_written_whole_and_read_back() {
        let dir = tempfile::tempdir().unwrap();
        let path = path(&dir.path().join("tokenizers"), "abc");
        assert!(read(&path).is_err());
        write(&path, &byte_level()).unwrap();
        assert_eq!(read(&path).unwrap().encode(TEXTS[2]).unwrap(), byte_level().encode(TEXTS[2]).unwrap());
        // Nothing else is left in the folder: the temporary file became the file.
        assert_eq!(std::fs::read_dir(path.parent().unwrap()).unwrap().count(), 1);
    }

    proptest! {
        /// Any bytes under a right checksum are an encoder or an error, never a panic.
        #[test]
        fn any_layout_decodes_or_fails(edits in prop::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..8), cut in any::<prop::sample::Index>()) {
            let bytes = encode(&sentencepiece());
            let mut body = bytes[..bytes.len() - 8].to_vec();
            for (at, v) in edits {
                let i = at.index(body.len());
                body[i] = v;
            }
            body.truncate(cut.index(body.len() + 1).max(12));
            let sum = xxh3_64(&body);
            body.extend_from_slice(&sum.to_le_bytes());
            let _ = decode(&body);
        }
    }
}

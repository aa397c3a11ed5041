//! Byte-pair merging of one pre-token, exact to both references.
//!
//! Hugging Face merges the pair with the lowest merge rank, leftmost first; tiktoken merges the
//! adjacent parts whose concatenation has the lowest rank, leftmost first. Both are "lowest
//! (rank, position) among the current pairs", so one pair table serves both: for a rank file,
//! every split of every token into two tokens is a pair with that token's rank.

use std::borrow::Cow;
use std::cmp::Reverse;
use std::collections::BinaryHeap;

use rustc_hash::FxHashMap;

/// Pieces up to this many bytes are merged by rescanning (cheap for short words); longer ones
/// use a heap, so a megabyte-long run of one character stays O(n log n).
const SCAN_LIMIT: usize = 96;

/// A pair that does not merge: its rank sorts after every real one.
const NO_MERGE: (u32, u32) = (u32::MAX, 0);

/// Longest token kept under a [`short_key`].
pub const SHORT_MAX_BYTES: usize = 15;

/// `piece` packed with its length into a u128, if it has 1 to [`SHORT_MAX_BYTES`] bytes: the
/// bytes in the low end, the length in the top byte.
///
/// Built from two overlapping loads rather than a copy into a buffer: the copy is a `memcpy`
/// call whose byte stores the following wide load must wait for (a store-forwarding stall),
/// and this runs once per pre-token.
#[inline(always)]
pub fn short_key(piece: &[u8]) -> Option<u128> {
    let n = piece.len();
    let packed = match n {
        1 => piece[0] as u128,
        2..=3 => {
            let (lo, hi) = (u16::from_le_bytes([piece[0], piece[1]]), u16::from_le_bytes([piece[n - 2], piece[n - 1]]));
            lo as u128 | (hi as u128) << ((n - 2) * 8)
        }
        4..=7 => {
            let lo = u32::from_le_bytes(piece[..4].try_into().expect("4 bytes"));
            let hi = u32::from_le_bytes(piece[n - 4..].try_into().expect("4 bytes"));
            lo as u128 | (hi as u128) << ((n - 4) * 8)
        }
        8..=SHORT_MAX_BYTES => {
            let lo = u64::from_le_bytes(piece[..8].try_into().expect("8 bytes"));
            let hi = u64::from_le_bytes(piece[n - 8..].try_into().expect("8 bytes"));
            lo as u128 | (hi as u128) << ((n - 8) * 8)
        }
        _ => return None,
    };
    Some(packed | (n as u128) << 120)
}

/// Token bytes -> id, split by length: tokens of up to 7 bytes (70% of Llama-3's, GPT-2's and
/// Qwen's vocabularies) by their [`short_key`] narrowed to a u64, those of up to
/// [`SHORT_MAX_BYTES`] by the whole key, so that a lookup is one probe with the key in the slot,
/// where a byte-string key costs a pointer chase and a `memcmp`; the longer ones by their bytes.
/// The narrow table's 16-byte slots (a u128 key makes 32) keep the table most lookups probe at a
/// quarter of the single table's size: 2 MiB for Llama-3 instead of 8.
struct Vocab {
    narrow: FxHashMap<u64, u32>,
    short: FxHashMap<u128, u32>,
    long: FxHashMap<Vec<u8>, u32>,
}

/// Keys of up to this many bytes are in [`Vocab`]'s narrow table.
const NARROW_MAX_BYTES: u128 = 7;

/// A [`short_key`] of at most [`NARROW_MAX_BYTES`] bytes as a u64: the bytes, then the length in
/// the top byte.
#[inline(always)]
fn narrow(key: u128) -> Option<u64> {
    let len = key >> 120;
    (len <= NARROW_MAX_BYTES).then_some(key as u64 | (len as u64) << 56)
}

impl Vocab {
    /// Later duplicates of a token win, as in a map built from the same pairs.
    fn new<T: AsRef<[u8]> + Into<Vec<u8>>>(tokens: impl IntoIterator<Item = (T, u32)>) -> Self {
        let tokens = tokens.into_iter();
        // About 70% of a vocabulary is narrow: room for three quarters keeps Llama-3's table at
        // 2 MiB, where room for all of it would double it.
        let mut narrow_map = FxHashMap::with_capacity_and_hasher(tokens.size_hint().0 / 4 * 3, Default::default());
        let (mut short, mut long) = (FxHashMap::default(), FxHashMap::default());
        for (token, id) in tokens {
            match short_key(token.as_ref()) {
                Some(key) => match narrow(key) {
                    Some(k) => narrow_map.insert(k, id),
                    None => short.insert(key, id),
                },
                None => long.insert(token.into(), id),
            };
        }
        Self { narrow: narrow_map, short, long }
    }

    #[inline]
    fn get(&self, bytes: &[u8]) -> Option<u32> {
        match short_key(bytes) {
            Some(key) => match narrow(key) {
                Some(k) => self.narrow.get(&k).copied(),
                None => self.short.get(&key).copied(),
            },
            None => self.long.get(bytes).copied(),
        }
    }

    /// How many tokens there are.
    fn len(&self) -> usize {
        self.narrow.len() + self.short.len() + self.long.len()
    }

    /// Every token's bytes and id.
    fn for_each(&self, mut f: impl FnMut(&[u8], u32)) {
        for (&key, &id) in &self.narrow {
            f(&key.to_le_bytes()[..(key >> 56) as usize], id);
        }
        for (&key, &id) in &self.short {
            f(&key.to_le_bytes()[..(key >> 120) as usize], id);
        }
        for (token, &id) in &self.long {
            f(token, id);
        }
    }
}

/// `lengths[id] = len`, the table grown with zeros (ids without a token) to hold `id`.
pub fn set_length(lengths: &mut Vec<u32>, id: u32, len: usize) {
    let id = id as usize;
    if id >= lengths.len() {
        lengths.resize(id + 1, 0);
    }
    lengths[id] = len as u32;
}

/// Ids below this have their pairs in [`Merges`]' grid.
const GRID: u32 = 512;

/// (left id, right id) -> (rank, merged id): a dense grid for pairs of two ids below [`GRID`], a
/// hash map for the others. The byte-level vocabularies number their tokens in training order
/// (GPT-2, Llama-3, tiktoken's), so small ids are the frequent tokens: a Wikipedia pass of Llama-3
/// makes 56% of its pair lookups in the grid (GPT-2: 61%), where each would be a miss of the CPU's
/// cache in a map of megabytes. The grid holds a u16 index per cell (512 KiB), as few cells merge.
struct Merges {
    map: FxHashMap<u64, (u32, u32)>,
    /// 0 for a pair that does not merge, else one more than its place in `values`; empty when
    /// more than u16::MAX - 1 pairs would need it (the map then answers every pair).
    grid: Box<[u16]>,
    values: Vec<(u32, u32)>,
}

impl Merges {
    fn new(map: FxHashMap<u64, (u32, u32)>) -> Self {
        let mut grid = vec![0u16; (GRID * GRID) as usize].into_boxed_slice();
        let mut values = Vec::new();
        for (&key, &value) in &map {
            let (a, b) = ((key >> 32) as u32, key as u32);
            if a < GRID && b < GRID {
                if values.len() >= u16::MAX as usize - 1 {
                    return Self { map, grid: Box::new([]), values: Vec::new() };
                }
                values.push(value);
                grid[(a * GRID + b) as usize] = values.len() as u16;
            }
        }
        Self { map, grid, values }
    }

    #[inline]
    fn get(&self, a: u32, b: u32) -> Option<(u32, u32)> {
        if a < GRID && b < GRID && !self.grid.is_empty() {
            let i = self.grid[(a * GRID + b) as usize];
            return (i != 0).then(|| self.values[i as usize - 1]);
        }
        self.map.get(&pair(a, b)).copied()
    }
}

/// A BPE model: its vocabulary, merges and how a piece is cut before merging.
pub struct BpeModel {
    vocab: Vocab,
    atoms: Atoms,
    merges: Merges,
    /// A piece that is itself a token is emitted whole (tiktoken always; HF with `ignore_merges`).
    whole_first: bool,
}

/// A piece's pairs by the rank of their merge, handed out lowest rank first and, within a rank,
/// leftmost first: the order of a heap of (rank, position), for [`BpeModel::merge_by_ranks`].
///
/// A merge usually makes pairs of higher rank than its own (a token is trained after its
/// parts), so pairs wait in one bucket per rank, and a bucket is complete and sorted when its
/// turn comes. A pair of a rank not above the bucket being taken (merge lists are not always in
/// training order) waits in a small heap instead, and each step takes the lower of the two.
#[derive(Default)]
struct Buckets {
    by_rank: FxHashMap<u32, Vec<u32>>,
    /// The ranks with a bucket, lowest first.
    ranks: BinaryHeap<Reverse<u32>>,
    /// The bucket being taken: its rank, positions and how many were handed out.
    current: (u32, Vec<u32>, usize),
    /// Pairs of a rank at or below the current bucket's, as (rank, position).
    late: BinaryHeap<Reverse<(u32, u32)>>,
}

impl Buckets {
    fn add(&mut self, rank: u32, position: u32) {
        if !self.current.1.is_empty() && rank <= self.current.0 {
            self.late.push(Reverse((rank, position)));
            return;
        }
        let bucket = self.by_rank.entry(rank).or_default();
        if bucket.is_empty() {
            self.ranks.push(Reverse(rank));
        }
        bucket.push(position);
    }

    /// The next (rank, position), lowest first.
    fn next(&mut self) -> Option<(u32, u32)> {
        let (_, positions, taken) = &mut self.current;
        if *taken == positions.len() {
            match self.ranks.pop() {
                Some(Reverse(r)) => {
                    let mut p = self.by_rank.remove(&r).unwrap_or_default();
                    // Positions arrive in order from each lower rank; several lower ranks interleave.
                    if !p.is_sorted() {
                        p.sort_unstable();
                    }
                    self.current = (r, p, 0);
                }
                None => return self.late.pop().map(|Reverse(x)| x),
            }
        }
        let (rank, positions, taken) = &mut self.current;
        let from_bucket = (*rank, positions[*taken]);
        match self.late.peek() {
            Some(&Reverse(late)) if late < from_bucket => {
                self.late.pop();
                Some(late)
            }
            _ => {
                *taken += 1;
                Some(from_bucket)
            }
        }
    }
}

/// A model once every merge is resolved to ids: what a compiled tokenizer stores, so that
/// loading it again needs no vocabulary lookup per merge.
pub struct Parts<'a> {
    /// Each token's bytes and id, by id.
    pub tokens: Vec<(Cow<'a, [u8]>, u32)>,
    /// (left id, right id, rank, merged id), by rank.
    pub merges: Vec<[u32; 4]>,
    /// `None` for byte-level BPE; how a SentencePiece-style one handles unknown characters.
    pub chars: Option<Unknown>,
    /// A piece that is itself a token is emitted whole.
    pub whole_first: bool,
}

/// What a piece is cut into before merging.
enum Atoms {
    /// Byte-level BPE: every byte is a token.
    Bytes {
        ids: [u32; 256],
        /// The merge of two single bytes, by `left << 8 | right`: a piece's first pairs are all
        /// of this kind, and a 512 KiB array stays in the CPU's cache where the hash table
        /// (hundreds of thousands of entries) does not.
        pairs: Box<[(u32, u32)]>,
    },
    /// SentencePiece-style BPE: characters, as the `tokenizers` crate's BPE cuts a word. A
    /// character missing from the vocabulary becomes its bytes' `<0xXX>` tokens (byte fallback)
    /// or the unknown token, consecutive unknowns fused into one when `fuse_unk`.
    Chars { byte_fallback: Option<[u32; 256]>, unk: Option<u32>, fuse_unk: bool, bmp: Bmp },
}

/// The id of each character of the Basic Multilingual Plane that is a token, by code point
/// (`u32::MAX` for the others): a SentencePiece-style piece is looked up one character at a
/// time, and an index into 256 KiB costs less than a probe of the vocabulary, which was 15% of
/// Mistral's encoder on UDHR. Empty when a token's id is `u32::MAX`, which it could not tell
/// from a missing one; characters beyond the plane are looked up in the vocabulary.
struct Bmp(Box<[u32]>);

impl Bmp {
    fn new(vocab: &Vocab) -> Self {
        let mut ids = vec![u32::MAX; 1 << 16].into_boxed_slice();
        let mut usable = true;
        vocab.for_each(|token, id| {
            let mut chars = std::str::from_utf8(token).unwrap_or_default().chars();
            if let (Some(c), None) = (chars.next(), chars.next()) {
                if let Some(slot) = ids.get_mut(c as usize) {
                    usable &= id != u32::MAX;
                    *slot = id;
                }
            }
        });
        Self(if usable { ids } else { Box::new([]) })
    }

    /// The id of the character spelled by `bytes`, if it is a token.
    #[inline]
    fn id(&self, bytes: &[u8], vocab: &Vocab) -> Option<u32> {
        let low6 = |b: u8| (b & 0x3F) as usize;
        let cp = match *bytes {
            [a] => a as usize,
            [a, b] => ((a & 0x1F) as usize) << 6 | low6(b),
            [a, b, c] => ((a & 0x0F) as usize) << 12 | low6(b) << 6 | low6(c),
            _ => return vocab.get(bytes),
        };
        match self.0.get(cp) {
            Some(&id) => (id != u32::MAX).then_some(id),
            None => vocab.get(bytes),
        }
    }
}

/// How a SentencePiece-style model handles characters outside its vocabulary.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Unknown {
    /// Emit a missing character as its bytes' `<0xXX>` tokens.
    pub byte_fallback: bool,
    /// The unknown token, when the model has one.
    pub unk: Option<u32>,
    /// Consecutive unknown characters become one unknown token.
    pub fuse_unk: bool,
}

#[inline]
fn pair(a: u32, b: u32) -> u64 {
    (a as u64) << 32 | b as u64
}

impl BpeModel {
    /// A tiktoken rank table: token bytes and rank, which is also the id.
    pub fn from_ranks<T: AsRef<[u8]> + Into<Vec<u8>>>(ranks: impl IntoIterator<Item = (T, u32)>) -> Result<Self, String> {
        let vocab = Vocab::new(ranks);
        // Real tables have about 2.3 splits into two tokens per token (cl100k: 233k for 100k).
        let tokens = vocab.len();
        let mut merges = FxHashMap::with_capacity_and_hasher(tokens * 5 / 2, Default::default());
        vocab.for_each(|token, rank| {
            for k in 1..token.len() {
                // The suffix is looked up only when the prefix is a token: most long prefixes are not.
                let Some(a) = vocab.get(&token[..k]) else { continue };
                if let Some(b) = vocab.get(&token[k..]) {
                    merges.insert(pair(a, b), (rank, rank));
                }
            }
        });
        Self::byte_level(vocab, merges, true)
    }

    /// A tiktoken rank table (token bytes and rank) with where each token is cut by its last
    /// merge when it is encoded alone (the left part's length; 0 for a byte, and for a token
    /// byte-pair encoding never forms from its bytes): the one pair of the token that can
    /// merge in any text.
    ///
    /// Why only that one: when two parts join into a token `t`, the bytes under them are `t`'s,
    /// and every merge inside those bytes came before any across their edges (one across would
    /// have left no part ending there). Merges go lowest rank first, leftmost among equals, so
    /// the merges inside are those of encoding `t` alone, in the same order, ending in the same
    /// pair. Any other split of `t` into two tokens never meets: [`Self::from_ranks`] keeps all
    /// of them (2.3 per token), this keeps one, so the table probed on every merge is less than
    /// half as large. `tiktoken::tests` compares it with tiktoken-rs on texts of glued tokens.
    pub fn from_last_merges(ranks: &[(&[u8], u32)], splits: &[u16]) -> Result<Self, String> {
        let vocab = Vocab::new(ranks.iter().copied());
        let mut merges = FxHashMap::with_capacity_and_hasher(ranks.len(), Default::default());
        for (&(token, rank), &split) in ranks.iter().zip(splits).filter(|(_, &split)| split > 0) {
            let (left, right) = token.split_at_checked(split as usize).ok_or("a merge cuts outside its token")?;
            let parts = vocab.get(left).zip(vocab.get(right));
            let (a, b) = parts.ok_or_else(|| format!("the merge of rank {rank} joins a part that is not a token"))?;
            merges.insert(pair(a, b), (rank, rank));
        }
        Self::byte_level(vocab, merges, true)
    }

    /// A Hugging Face byte-level BPE: vocabulary (token bytes and id) and merges in priority
    /// order, both as raw bytes.
    pub fn from_merges(
        vocab: Vec<(Vec<u8>, u32)>,
        merge_list: &MergeList,
        ignore_merges: bool,
    ) -> Result<Self, String> {
        let vocab = Vocab::new(vocab);
        let merges = merge_table(&vocab, merge_list)?;
        Self::byte_level(vocab, merges, ignore_merges)
    }

    /// A Hugging Face SentencePiece-style BPE: vocabulary and merges as UTF-8 (`▁` for spaces).
    pub fn sentencepiece(
        vocab: Vec<(Vec<u8>, u32)>,
        merge_list: &MergeList,
        ignore_merges: bool,
        unknown: Unknown,
    ) -> Result<Self, String> {
        let vocab = Vocab::new(vocab);
        let merges = merge_table(&vocab, merge_list)?;
        Ok(Self::chars(vocab, merges, ignore_merges, unknown))
    }

    fn chars(vocab: Vocab, merges: FxHashMap<u64, (u32, u32)>, ignore_merges: bool, unknown: Unknown) -> Self {
        let byte_fallback = match unknown.byte_fallback {
            // The `tokenizers` crate falls back only when every byte of the character has a token.
            true => (0..=255u8)
                .map(|b| vocab.get(format!("<0x{b:02X}>").as_bytes()))
                .collect::<Option<Vec<u32>>>()
                .map(|ids| <[u32; 256]>::try_from(ids).expect("256 bytes")),
            false => None,
        };
        let atoms = Atoms::Chars { byte_fallback, unk: unknown.unk, fuse_unk: unknown.fuse_unk, bmp: Bmp::new(&vocab) };
        Self { vocab, atoms, merges: Merges::new(merges), whole_first: ignore_merges }
    }

    /// The model's parts with every merge resolved to ids, for [`super::compiled`].
    pub fn parts(&self) -> Parts<'static> {
        let mut tokens = Vec::with_capacity(self.vocab.len());
        self.vocab.for_each(|token, id| tokens.push((Cow::Owned(token.to_vec()), id)));
        // Sorted, so that the same file compiles to the same bytes on every machine.
        tokens.sort_unstable_by(|(a, i), (b, j)| (i, a).cmp(&(j, b)));
        let mut merges: Vec<[u32; 4]> = self.merges.map.iter().map(|(&k, &(rank, id))| [(k >> 32) as u32, k as u32, rank, id]).collect();
        merges.sort_unstable_by_key(|&[a, b, rank, _]| (rank, a, b));
        let chars = match &self.atoms {
            Atoms::Bytes { .. } => None,
            Atoms::Chars { byte_fallback, unk, fuse_unk, .. } => Some(Unknown { byte_fallback: byte_fallback.is_some(), unk: *unk, fuse_unk: *fuse_unk }),
        };
        Parts { tokens, merges, chars, whole_first: self.whole_first }
    }

    /// The model [`Self::parts`] describes.
    pub fn from_parts(parts: Parts<'_>) -> Result<Self, String> {
        let vocab = Vocab::new(parts.tokens);
        let mut merges = FxHashMap::with_capacity_and_hasher(parts.merges.len(), Default::default());
        merges.extend(parts.merges.iter().map(|&[a, b, rank, id]| (pair(a, b), (rank, id))));
        match parts.chars {
            None => Self::byte_level(vocab, merges, parts.whole_first),
            Some(unknown) => Ok(Self::chars(vocab, merges, parts.whole_first, unknown)),
        }
    }

    fn byte_level(vocab: Vocab, merges: FxHashMap<u64, (u32, u32)>, whole_first: bool) -> Result<Self, String> {
        let mut ids = [0u32; 256];
        for (byte, slot) in ids.iter_mut().enumerate() {
            *slot = vocab.get(&[byte as u8]).ok_or_else(|| {
                format!("byte 0x{byte:02x} has no token, so not every text can be encoded")
            })?;
        }
        let mut pairs = vec![NO_MERGE; 1 << 16].into_boxed_slice();
        for (i, slot) in pairs.iter_mut().enumerate() {
            *slot = merges.get(&pair(ids[i >> 8], ids[i & 0xFF])).copied().unwrap_or(NO_MERGE);
        }
        Ok(Self { vocab, atoms: Atoms::Bytes { ids, pairs }, merges: Merges::new(merges), whole_first })
    }

    /// Each id's length in bytes, indexed by id (0 for ids without a token), for a byte-level
    /// model, whose tokens are the text's bytes; `None` for a SentencePiece-style one.
    pub fn byte_lengths(&self) -> Option<Vec<u32>> {
        let Atoms::Bytes { .. } = self.atoms else { return None };
        let mut lengths = Vec::new();
        self.vocab.for_each(|token, id| set_length(&mut lengths, id, token.len()));
        Some(lengths)
    }

    /// The id of a piece that is one token, when this model emits such pieces whole.
    #[inline]
    pub fn whole(&self, piece: &[u8]) -> Option<u32> {
        if let (Atoms::Bytes { ids, .. }, [byte]) = (&self.atoms, piece) {
            return Some(ids[*byte as usize]);
        }
        if self.whole_first {
            return self.vocab.get(piece);
        }
        None
    }

    #[inline]
    fn merge_of(&self, a: u32, b: u32) -> Option<(u32, u32)> {
        self.merges.get(a, b)
    }

    /// Appends the ids of `piece` after merging.
    pub fn merge(&self, piece: &[u8], out: &mut Vec<u32>) {
        let start = out.len();
        match &self.atoms {
            Atoms::Bytes { ids, pairs } => {
                out.extend(piece.iter().map(|&b| ids[b as usize]));
                let first = |_: &[u32], j: usize| pairs[(piece[j] as usize) << 8 | piece[j + 1] as usize];
                self.merge_symbols(out, start, first)
            }
            Atoms::Chars { byte_fallback, unk, fuse_unk, bmp } => {
                self.push_chars(piece, bmp, byte_fallback.as_ref(), *unk, *fuse_unk, out);
                let first = |s: &[u32], j: usize| self.merge_of(s[j], s[j + 1]).unwrap_or(NO_MERGE);
                self.merge_symbols(out, start, first)
            }
        }
    }

    /// The symbols of a SentencePiece-style piece, one per character.
    fn push_chars(&self, piece: &[u8], bmp: &Bmp, byte_fallback: Option<&[u32; 256]>, unk: Option<u32>, fuse_unk: bool, out: &mut Vec<u32>) {
        let mut last_unknown = false;
        let mut at = 0;
        // A piece is cut from a `&str` at character boundaries: each character's length is in
        // its first byte, so the piece is not validated again.
        while at < piece.len() {
            let len = match piece[at] {
                0..=0x7F => 1,
                0xC0..=0xDF => 2,
                0xE0..=0xEF => 3,
                _ => 4,
            };
            let bytes = &piece[at..(at + len).min(piece.len())];
            at += len;
            if let Some(id) = bmp.id(bytes, &self.vocab) {
                out.push(id);
                last_unknown = false;
            } else if let Some(ids) = byte_fallback {
                out.extend(bytes.iter().map(|&b| ids[b as usize]));
                last_unknown = false;
            } else if let Some(unk) = unk {
                if !(fuse_unk && last_unknown) {
                    out.push(unk);
                }
                last_unknown = true;
            }
        }
    }

    /// Merges the symbols `out[start..]` in place; `first(symbols, j)` is the (rank, merged id) of
    /// the initial pair at `j`.
    fn merge_symbols(&self, out: &mut Vec<u32>, start: usize, first: impl Fn(&[u32], usize) -> (u32, u32)) {
        if out.len() - start <= SCAN_LIMIT {
            self.merge_by_scan(out, start, first)
        } else {
            self.merge_by_ranks(out, start, first)
        }
    }

    /// Keeps each adjacent pair's (rank, merged id) in an array, so a merge looks up only the
    /// two pairs it changes, and finding the next merge is a scan without hashing. The arrays
    /// close up after a merge with plain loops: they are short, and a `memmove` call per merge
    /// cost more than the moves.
    fn merge_by_scan(&self, out: &mut Vec<u32>, start: usize, first: impl Fn(&[u32], usize) -> (u32, u32)) {
        let symbols = &mut out[start..];
        let mut n = symbols.len();
        let mut pairs = [NO_MERGE; SCAN_LIMIT];
        for (j, slot) in pairs.iter_mut().enumerate().take(n.saturating_sub(1)) {
            *slot = first(symbols, j);
        }
        while n > 1 {
            let (mut i, mut rank) = (0, pairs[0].0);
            for (j, &(r, _)) in pairs[1..n - 1].iter().enumerate() {
                if r < rank {
                    (i, rank) = (j + 1, r);
                }
            }
            if rank == u32::MAX {
                break;
            }
            symbols[i] = pairs[i].1;
            for j in i + 1..n - 1 {
                symbols[j] = symbols[j + 1];
                pairs[j] = pairs[j + 1];
            }
            n -= 1;
            if i > 0 {
                pairs[i - 1] = self.merge_of(symbols[i - 1], symbols[i]).unwrap_or(NO_MERGE);
            }
            if i + 1 < n {
                pairs[i] = self.merge_of(symbols[i], symbols[i + 1]).unwrap_or(NO_MERGE);
            }
        }
        out.truncate(start + n);
    }

    /// A long piece: its pairs taken in (rank, position) order from [`Buckets`], nearly linear
    /// where a heap of every pair paid a logarithm with a cache miss per level.
    fn merge_by_ranks(&self, out: &mut Vec<u32>, start: usize, first: impl Fn(&[u32], usize) -> (u32, u32)) {
        let ids = &mut out[start..];
        let n = ids.len();
        let end = n as u32;
        let mut next: Vec<u32> = (1..=end).collect();
        let mut prev: Vec<u32> = (0..end).map(|i| i.wrapping_sub(1)).collect();
        let mut alive = vec![true; n];
        let mut buckets = Buckets::default();
        for i in 0..n.saturating_sub(1) {
            let (rank, _) = first(ids, i);
            if rank != u32::MAX {
                buckets.add(rank, i as u32);
            }
        }
        while let Some((rank, i)) = buckets.next() {
            let j = next[i as usize];
            if !alive[i as usize] || j >= end {
                continue;
            }
            let Some((r, id)) = self.merge_of(ids[i as usize], ids[j as usize]) else { continue };
            if r != rank {
                continue;
            }
            ids[i as usize] = id;
            alive[j as usize] = false;
            let after = next[j as usize];
            next[i as usize] = after;
            if after < end {
                prev[after as usize] = i;
            }
            let before = prev[i as usize];
            if before < end {
                if let Some((r, _)) = self.merge_of(ids[before as usize], id) {
                    buckets.add(r, before);
                }
            }
            if after < end {
                if let Some((r, _)) = self.merge_of(id, ids[after as usize]) {
                    buckets.add(r, i);
                }
            }
        }
        keep_alive(out, start, &alive);
    }

    /// A heap of every pair, in (rank, position) order: the plain way, which the tests hold
    /// [`BpeModel::merge_by_ranks`] to.
    #[cfg(test)]
    fn merge_by_heap(&self, out: &mut Vec<u32>, start: usize, first: impl Fn(&[u32], usize) -> (u32, u32)) {
        let ids = &mut out[start..];
        let n = ids.len();
        let mut next: Vec<usize> = (1..=n).collect();
        let mut prev: Vec<usize> = (0..n).map(|i| i.wrapping_sub(1)).collect();
        let mut alive = vec![true; n];
        let mut heap = BinaryHeap::new();
        let push = |heap: &mut BinaryHeap<_>, ids: &[u32], i: usize, j: usize| {
            if let Some((rank, id)) = self.merge_of(ids[i], ids[j]) {
                heap.push(Reverse((rank, i, id)));
            }
        };
        for i in 0..n.saturating_sub(1) {
            let (rank, id) = first(ids, i);
            if rank != u32::MAX {
                heap.push(Reverse((rank, i, id)));
            }
        }
        while let Some(Reverse((rank, i, id))) = heap.pop() {
            let j = next[i];
            if !alive[i] || j >= n || self.merge_of(ids[i], ids[j]) != Some((rank, id)) {
                continue;
            }
            ids[i] = id;
            alive[j] = false;
            next[i] = next[j];
            if next[j] < n {
                prev[next[j]] = i;
            }
            if prev[i] < n {
                push(&mut heap, ids, prev[i], i);
            }
            if next[i] < n {
                push(&mut heap, ids, i, next[i]);
            }
        }
        keep_alive(out, start, &alive);
    }
}

/// Closes up `out[start..]` to the symbols still `alive` after merging.
fn keep_alive(out: &mut Vec<u32>, start: usize, alive: &[bool]) {
    let mut kept = start;
    for (i, &a) in alive.iter().enumerate() {
        if a {
            out[kept] = out[start + i];
            kept += 1;
        }
    }
    out.truncate(kept);
}

/// Merges in priority order, the bytes of each one's two tokens side by side in one buffer: a
/// file's 280k merges (Llama-3) cost no allocation each.
#[derive(Default)]
pub struct MergeList {
    bytes: Vec<u8>,
    /// Where each merge's left token ends and its right token ends in `bytes`.
    ends: Vec<(usize, usize)>,
}

impl MergeList {
    /// Adds a merge, each token's bytes appended to the list by `spell`.
    pub fn push_with<E>(&mut self, a: &str, b: &str, mut spell: impl FnMut(&str, &mut Vec<u8>) -> Result<(), E>) -> Result<(), E> {
        spell(a, &mut self.bytes)?;
        let mid = self.bytes.len();
        spell(b, &mut self.bytes)?;
        self.ends.push((mid, self.bytes.len()));
        Ok(())
    }

    /// The merges in priority order: the left token, the right one, and both (the merged token).
    fn iter(&self) -> impl Iterator<Item = (&[u8], &[u8], &[u8])> {
        let mut start = 0;
        self.ends.iter().map(move |&(mid, end)| {
            let merge = (&self.bytes[start..mid], &self.bytes[mid..end], &self.bytes[start..end]);
            start = end;
            merge
        })
    }

    /// How many merges there are.
    fn len(&self) -> usize {
        self.ends.len()
    }
}

/// (left id, right id) -> (rank, merged id) from merges in priority order.
fn merge_table(vocab: &Vocab, merge_list: &MergeList) -> Result<FxHashMap<u64, (u32, u32)>, String> {
    let mut merges = FxHashMap::with_capacity_and_hasher(merge_list.len(), Default::default());
    for (rank, (a, b, merged)) in merge_list.iter().enumerate() {
        let id = |t: &[u8]| {
            vocab.get(t).ok_or_else(|| {
                format!("merge {} ('{}' + '{}') uses a token missing from the vocabulary", rank + 1,
                    String::from_utf8_lossy(a), String::from_utf8_lossy(b))
            })
        };
        // Later duplicates win, as in the `tokenizers` crate's map.
        merges.insert(pair(id(a)?, id(b)?), (rank as u32, id(merged)?));
    }
    Ok(merges)
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    /// A toy rank table over "abc": every byte, then merges that overlap and chain.
    fn toy() -> BpeModel {
        let mut ranks: FxHashMap<Vec<u8>, u32> = (0..=255u8).map(|b| (vec![b], b as u32)).collect();
        for (i, t) in ["ab", "bc", "aa", "abc", "aaaa", "ca", "bca", "cc", "ccc"].iter().enumerate() {
            ranks.insert(t.as_bytes().to_vec(), 256 + i as u32);
        }
        BpeModel::from_ranks(ranks).unwrap()
    }

    proptest! {
        #[test]
        fn heap_scan_and_ranks_merge_alike(s in "[abc]{0,96}", long in "[abc]{97,400}") {
            let m = toy();
            prop_assert_eq!(merged(&m, s.as_bytes(), Merge::Scan), merged(&m, s.as_bytes(), Merge::Heap));
            prop_assert_eq!(merged(&m, s.as_bytes(), Merge::Ranks), merged(&m, s.as_bytes(), Merge::Heap));
            prop_assert_eq!(merged(&m, long.as_bytes(), Merge::Ranks), merged(&m, long.as_bytes(), Merge::Heap));
            // Merges out of training order: a token ranks before the parts it is made of.
            let m = disordered();
            prop_assert_eq!(merged(&m, long.as_bytes(), Merge::Ranks), merged(&m, long.as_bytes(), Merge::Heap));
            prop_assert_eq!(merged(&m, s.as_bytes(), Merge::Ranks), merged(&m, s.as_bytes(), Merge::Scan));
        }
    }

    /// Like [`toy`], but "abc", "aaaa" and "ccc" rank before the tokens they are made of.
    fn disordered() -> BpeModel {
        let mut ranks: FxHashMap<Vec<u8>, u32> = (0..=255u8).map(|b| (vec![b], b as u32)).collect();
        for (i, t) in ["abc", "aaaa", "ccc", "ab", "bc", "aa", "ca", "bca", "cc", "cab", "aab"].iter().enumerate() {
            ranks.insert(t.as_bytes().to_vec(), 256 + i as u32);
        }
        BpeModel::from_ranks(ranks).unwrap()
    }

    enum Merge {
        Scan,
        Heap,
        Ranks,
    }

    /// `piece` merged one way, whatever its length.
    fn merged(m: &BpeModel, piece: &[u8], how: Merge) -> Vec<u32> {
        let Atoms::Bytes { ids, pairs } = &m.atoms else { unreachable!("a byte-level model") };
        let mut out: Vec<u32> = piece.iter().map(|&b| ids[b as usize]).collect();
        let first = |_: &[u32], j: usize| pairs[(piece[j] as usize) << 8 | piece[j + 1] as usize];
        match how {
            Merge::Scan => m.merge_by_scan(&mut out, 0, first),
            Merge::Heap => m.merge_by_heap(&mut out, 0, first),
            Merge::Ranks => m.merge_by_ranks(&mut out, 0, first),
        }
        out
    }

    /// A SentencePiece-style toy: "▁", "a", "b", "é" and their merges, `<0xXX>` for every byte
    /// when `byte_fallback`.
    fn sentencepiece(unknown: Unknown) -> BpeModel {
        let mut vocab: FxHashMap<Vec<u8>, u32> = FxHashMap::default();
        for (i, t) in ["<unk>", "▁", "a", "b", "é", "▁a", "ab", "▁ab", "▁é"].iter().enumerate() {
            vocab.insert(t.as_bytes().to_vec(), i as u32);
        }
        if unknown.byte_fallback {
            for b in 0..=255u32 {
                vocab.insert(format!("<0x{b:02X}>").into_bytes(), 100 + b);
            }
        }
        let mut merges = MergeList::default();
        for (a, b) in [("a", "b"), ("▁", "a"), ("▁a", "b"), ("▁", "é")] {
            let spell = |t: &str, out: &mut Vec<u8>| {
                out.extend_from_slice(t.as_bytes());
                Ok::<_, ()>(())
            };
            merges.push_with(a, b, spell).unwrap();
        }
        BpeModel::sentencepiece(vocab.into_iter().collect(), &merges, false, unknown).unwrap()
    }

    #[test]
    fn the_plane_table_answers_as_the_vocabulary_does() {
        let tokens = ["a", "é", "中", "😀", "ab", "<unk>"];
        let vocab = Vocab::new(tokens.iter().enumerate().map(|(i, t)| (t.as_bytes(), i as u32)));
        let bmp = Bmp::new(&vocab);
        for c in ["a", "z", "é", "è", "中", "文", "😀", "😁", "\u{FFFF}", "\u{10000}"] {
            assert_eq!(bmp.id(c.as_bytes(), &vocab), vocab.get(c.as_bytes()), "{c:?}");
        }
        assert_eq!(bmp.id("中".as_bytes(), &vocab), Some(2));
        // A token whose id is the table's "none" leaves the vocabulary to answer.
        let odd = Vocab::new([("a".as_bytes(), u32::MAX)]);
        assert_eq!(Bmp::new(&odd).id(b"a", &odd), Some(u32::MAX));
    }

    #[test]
    fn sentencepiece_merges_characters_and_falls_back_to_bytes_or_one_unknown() {
        let sp = |u, text: &str| {
            let mut out = vec![];
            sentencepiece(u).merge(text.as_bytes(), &mut out);
            out
        };
        let fallback = Unknown { byte_fallback: true, unk: Some(0), fuse_unk: true };
        // "ab" (rank 0) merges before "▁a" (rank 1), so "▁ab" never forms from "▁a" + "b".
        assert_eq!(sp(fallback, "▁ab"), vec![1, 6]);
        assert_eq!(sp(fallback, "▁éa"), vec![8, 2]);
        // "ü" is not in the vocabulary: its two UTF-8 bytes, as <0xC3> <0xBC>.
        assert_eq!(sp(fallback, "▁üb"), vec![1, 100 + 0xC3, 100 + 0xBC, 3]);
        let fused = Unknown { byte_fallback: false, unk: Some(0), fuse_unk: true };
        assert_eq!(sp(fused, "aüüb"), vec![2, 0, 3]);
        let unfused = Unknown { byte_fallback: false, unk: Some(0), fuse_unk: false };
        assert_eq!(sp(unfused, "aüüb"), vec![2, 0, 0, 3]);
        // A long piece goes through the heap with the same result as the scan.
        let long = "▁ab".repeat(100);
        assert_eq!(sp(fallback, &long), [1, 6].repeat(100));
    }

    #[test]
    fn the_grid_and_the_map_answer_alike() {
        // Pairs inside the grid and outside it, and more grid pairs than a u16 can number.
        for n in [1_000u32, 70_000] {
            let mut map = FxHashMap::default();
            for i in 0..n {
                // Distinct pairs inside the grid, and as many with an id outside it.
                map.insert(pair(i % GRID, i / GRID), (i, i + 7));
                map.insert(pair(GRID + i % 88, i % 600), (n + i, i));
            }
            let merges = Merges::new(map.clone());
            assert_eq!(merges.grid.is_empty(), n >= u16::MAX as u32, "n = {n}");
            for a in 0..600 {
                for b in 0..600 {
                    assert_eq!(merges.get(a, b), map.get(&pair(a, b)).copied(), "({a}, {b}), n = {n}");
                }
            }
        }
    }

    #[test]
    fn lowest_rank_leftmost_first() {
        let m = toy();
        let mut out = vec![];
        // "aaa": "aa" (258) merges at the left; then nothing joins "aa"+"a".
        m.merge(b"aaa", &mut out);
        assert_eq!(out, vec![258, b'a' as u32]);
        out.clear();
        // "abca": ab(256) first, then "ab"+"c" -> abc(259); "bca" never forms.
        m.merge(b"abca", &mut out);
        assert_eq!(out, vec![259, b'a' as u32]);
    }

    #[test]
    fn short_keys_are_the_bytes_and_the_length() {
        let text = b"abcdefghijklmnop\xff\x00\x80";
        for start in 0..4 {
            for end in start + 1..=(start + SHORT_MAX_BYTES).min(text.len()) {
                let piece = &text[start..end];
                let mut buf = [0u8; 16];
                buf[..piece.len()].copy_from_slice(piece);
                buf[15] = piece.len() as u8;
                assert_eq!(short_key(piece), Some(u128::from_le_bytes(buf)), "{piece:?}");
            }
        }
        assert_eq!(short_key(b""), None);
        assert_eq!(short_key(&text[..16]), None);
    }

    #[test]
    fn the_vocabulary_gives_back_what_it_was_given() {
        let tokens: FxHashMap<Vec<u8>, u32> =
            [&b"a"[..], b"ab", b"abcdefghijklmno", b"abcdefghijklmnop", b"\x00\x00"].iter().zip(0..).map(|(t, i)| (t.to_vec(), i)).collect();
        let vocab = Vocab::new(tokens.clone());
        let mut back = FxHashMap::default();
        vocab.for_each(|t, id| {
            back.insert(t.to_vec(), id);
        });
        assert_eq!(back, tokens);
        for (t, &id) in &tokens {
            assert_eq!(vocab.get(t), Some(id));
        }
        assert_eq!(vocab.get(b"\x00"), None, "a prefix of a key is not a key");
        assert_eq!(vocab.get(b"abcdefghijklmnopq"), None);
    }

    #[test]
    fn a_missing_byte_is_refused() {
        let ranks: FxHashMap<Vec<u8>, u32> = [(b"a".to_vec(), 0)].into_iter().collect();
        assert!(BpeModel::from_ranks(ranks).err().unwrap().contains("byte 0x00"));
    }
}

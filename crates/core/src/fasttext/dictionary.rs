//! The vocabulary, and how a line of text becomes the input rows whose average is the hidden
//! vector: each word's own row and its character n-grams, then the word n-grams, all hashed as
//! fastText hashes them (FNV-1a over signed bytes, buckets modulo `bucket`).

use rustc_hash::FxHashMap;

use super::file::{Args, Reader};
use super::ModelError;

const EOS: &[u8] = b"</s>";
const LABEL_PREFIX: &[u8] = b"__label__";
const NGRAM_MULTIPLIER: u64 = 116_049_371;

/// fastText's word separators (`Dictionary::readWord`). Newlines separate words too: the text
/// is taken as one line.
fn is_space(b: u8) -> bool {
    matches!(b, b' ' | b'\n' | b'\r' | b'\t' | 0x0b | 0x0c | 0)
}

/// FNV-1a as fastText computes it: each byte sign-extended first, as every released model was
/// trained with.
fn fnv(bytes: &[u8]) -> u32 {
    bytes.iter().fold(2_166_136_261u32, |h, &b| fnv_step(h, b))
}

fn fnv_step(h: u32, b: u8) -> u32 {
    (h ^ (b as i8 as i32 as u32)).wrapping_mul(16_777_619)
}

pub(super) struct Dictionary {
    nwords: usize,
    /// Words then labels, as the file lists them.
    entries: Vec<Vec<u8>>,
    counts: Vec<i64>,
    /// Open addressing on the FNV hash: entry index + 1, 0 for empty.
    slots: Vec<u32>,
    /// A pruned (quantized) model keeps some n-gram buckets: bucket -> row after the words.
    pruned: Option<FxHashMap<i32, i32>>,
    /// Each word's input rows: itself, then its character n-grams (flattened, by offsets).
    subwords: Vec<u32>,
    subword_offsets: Vec<usize>,
    bucket: u32,
    minn: usize,
    maxn: usize,
    word_ngrams: usize,
}

impl Dictionary {
    pub(super) fn read(r: &mut Reader, args: &Args) -> Result<Self, ModelError> {
        let size = r.i32("the dictionary size")?;
        let nwords = r.i32("the word count")?;
        let nlabels = r.i32("the label count")?;
        r.i64("the token count")?;
        let prune_size = r.i64("the pruned n-gram count")?;
        if size <= 0 || nwords < 0 || nlabels <= 0 || nwords as i64 + nlabels as i64 != size as i64 {
            return Err(ModelError(format!(
                "the dictionary has {size} entries, {nwords} words and {nlabels} labels: a classifier needs labels, \
                 and words plus labels must be the entries"
            )));
        }
        let (size, nwords) = (size as usize, nwords as usize);
        // Each entry takes at least 10 bytes (a NUL, its count, its type): a larger size is corrupt,
        // and must not reserve memory for entries that are not there.
        if size > r.remaining() / 10 {
            return Err(ModelError(format!("the dictionary claims {size} entries, more than the file holds: it is truncated")));
        }
        let mut entries = Vec::with_capacity(size);
        let mut counts = Vec::with_capacity(size);
        for i in 0..size {
            let word = r.cstr("a dictionary entry")?.to_vec();
            counts.push(r.i64("an entry's count")?);
            let is_label = match r.u8("an entry's type")? {
                0 => false,
                1 => true,
                t => return Err(ModelError(format!("entry {i} has type {t}, neither word nor label: the file is corrupt"))),
            };
            if is_label != (i >= nwords) {
                return Err(ModelError(format!("entry {i} is out of place: words come before labels")));
            }
            entries.push(word);
        }
        let pruned = if prune_size >= 0 {
            let n = usize::try_from(prune_size).ok().filter(|&n| n <= r.remaining() / 8).ok_or_else(|| {
                ModelError(format!("the pruned n-gram count {prune_size} is larger than the file: it is corrupt"))
            })?;
            let mut map = FxHashMap::with_capacity_and_hasher(n, Default::default());
            for _ in 0..n {
                let (from, to) = (r.i32("a pruned n-gram")?, r.i32("a pruned n-gram's row")?);
                map.insert(from, to);
            }
            Some(map)
        } else {
            None
        };
        let mut dict = Self {
            nwords,
            slots: vec![0; (size as f64 / 0.7).ceil() as usize],
            entries,
            counts,
            pruned,
            subwords: Vec::new(),
            subword_offsets: vec![0],
            bucket: args.bucket,
            minn: args.minn,
            maxn: args.maxn,
            word_ngrams: args.word_ngrams,
        };
        for i in 0..size {
            let slot = dict.slot(&dict.entries[i], fnv(&dict.entries[i]));
            dict.slots[slot] = i as u32 + 1;
        }
        let mut word = Vec::new();
        for i in 0..nwords {
            dict.subwords.push(i as u32);
            if dict.entries[i] != EOS {
                bracket(&mut word, &dict.entries[i]);
                let mut subwords = std::mem::take(&mut dict.subwords);
                dict.char_ngrams(&word, &mut subwords);
                dict.subwords = subwords;
            }
            dict.subword_offsets.push(dict.subwords.len());
        }
        Ok(dict)
    }

    /// The number of input rows the ids may reach: words, then n-gram buckets or pruned rows.
    pub(super) fn input_rows(&self) -> usize {
        self.nwords + self.pruned.as_ref().map_or(self.bucket as usize, |p| p.values().map(|&v| v as usize + 1).max().unwrap_or(0))
    }

    pub(super) fn labels(&self) -> &[Vec<u8>] {
        &self.entries[self.nwords..]
    }

    pub(super) fn label_counts(&self) -> &[i64] {
        &self.counts[self.nwords..]
    }

    /// The slot of `word`: where it is, or the empty slot where it would go.
    fn slot(&self, word: &[u8], hash: u32) -> usize {
        let n = self.slots.len();
        let mut at = hash as usize % n;
        while let Some(i) = self.slots[at].checked_sub(1) {
            if self.entries[i as usize] == word {
                break;
            }
            at = (at + 1) % n;
        }
        at
    }

    fn id(&self, word: &[u8], hash: u32) -> Option<usize> {
        self.slots[self.slot(word, hash)].checked_sub(1).map(|i| i as usize)
    }

    /// fastText's `pushHash`: an n-gram bucket's row, if the model kept it.
    fn push_ngram(&self, rows: &mut Vec<u32>, bucket: i32) {
        let row = match &self.pruned {
            None => Some(bucket),
            Some(kept) => kept.get(&bucket).copied(),
        };
        if let Some(row) = row.filter(|&r| r >= 0) {
            rows.push((self.nwords + row as usize) as u32);
        }
    }

    /// The character n-grams (`minn..=maxn` characters) of a bracketed word `<word>`; single
    /// characters at the brackets are skipped, as in fastText.
    fn char_ngrams(&self, word: &[u8], rows: &mut Vec<u32>) {
        if self.bucket == 0 {
            return;
        }
        let is_continuation = |b: u8| b & 0xC0 == 0x80;
        for i in 0..word.len() {
            if is_continuation(word[i]) {
                continue;
            }
            let (mut j, mut h) = (i, 2_166_136_261u32);
            for n in 1..=self.maxn {
                if j >= word.len() {
                    break;
                }
                h = fnv_step(h, word[j]);
                j += 1;
                while j < word.len() && is_continuation(word[j]) {
                    h = fnv_step(h, word[j]);
                    j += 1;
                }
                if n >= self.minn && !(n == 1 && (i == 0 || j == word.len())) {
                    self.push_ngram(rows, (h % self.bucket) as i32);
                }
            }
        }
    }

    /// The input rows of one line, in fastText's order: per word its rows (an unknown word its
    /// n-grams only), the end-of-line token `</s>` last, then the word n-grams.
    pub(super) fn line(&self, text: &str) -> Vec<u32> {
        let (mut rows, mut bracketed, mut hashes) = (Vec::new(), Vec::new(), Vec::<i32>::new());
        let words = text.as_bytes().split(|&b| is_space(b)).filter(|w| !w.is_empty());
        for token in words.chain(std::iter::once(EOS)) {
            let h = fnv(token);
            match self.id(token, h) {
                Some(id) if id >= self.nwords => {} // a label in the text
                Some(id) => {
                    if self.maxn == 0 {
                        rows.push(id as u32);
                    } else {
                        rows.extend_from_slice(&self.subwords[self.subword_offsets[id]..self.subword_offsets[id + 1]]);
                    }
                    hashes.push(h as i32);
                }
                None if token.starts_with(LABEL_PREFIX) => {}
                None => {
                    if token != EOS {
                        bracket(&mut bracketed, token);
                        self.char_ngrams(&bracketed, &mut rows);
                    }
                    hashes.push(h as i32);
                }
            }
            if token == EOS {
                // fastText ends the line at `</s>`, even one written in the text.
                break;
            }
        }
        self.word_ngrams_of(&hashes, &mut rows);
        rows
    }

    /// fastText's `addWordNgrams`: the hashes are sign-extended, as fastText stores them as int32.
    fn word_ngrams_of(&self, hashes: &[i32], rows: &mut Vec<u32>) {
        if self.bucket == 0 {
            return;
        }
        for i in 0..hashes.len() {
            let mut h = hashes[i] as i64 as u64;
            for &next in hashes.iter().take(i + self.word_ngrams).skip(i + 1) {
                h = h.wrapping_mul(NGRAM_MULTIPLIER).wrapping_add(next as i64 as u64);
                self.push_ngram(rows, (h % self.bucket as u64) as i32);
            }
        }
    }
}

/// `<word>` into `out`.
fn bracket(out: &mut Vec<u8>, word: &[u8]) {
    out.clear();
    out.push(b'<');
    out.extend_from_slice(word);
    out.push(b'>');
}

//! Padding-free sequence packing: documents' token streams, each followed by an optional EOS, are
//! concatenated and cut into rows of exactly `seq_len` tokens. A row records which documents it
//! holds, where each one starts in the row, and where in the first document the row begins, so that
//! every token can be traced back to its source.
//!
//! [`Packer`] is the pure core (no Arrow); `tokq-engine` runs it over a DataFusion stream as the
//! `pack_tokens` table function. [`pad`] is padded mode, one document per row.

pub mod options;
pub mod pad;

pub use options::{PackOptions, Streams, Tail};

/// One finished row.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PackedRow {
    /// Exactly `seq_len` ids; the last `seq_len - n_tokens` are padding.
    pub tokens: Vec<u32>,
    /// The tokens that are not padding.
    pub n_tokens: usize,
    /// The caller's number of each document in the row, in order.
    pub docs: Vec<u64>,
    /// Where each of `docs` starts in `tokens`; the first is always 0.
    pub doc_offsets: Vec<u32>,
    /// Where the row starts in the first document's stream (its tokens, then EOS).
    pub first_offset: u64,
}

/// Counts over everything a packer saw, for the run summary.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct PackCounts {
    /// Documents pushed.
    pub docs: u64,
    /// Documents with no tokens (skipped).
    pub empty_docs: u64,
    /// Rows emitted.
    pub rows: u64,
    /// Tokens placed in rows, EOS included, padding not.
    pub tokens: u64,
    /// Tokens of a partial last row dropped (`tail=drop`).
    pub dropped_tokens: u64,
    /// Padding tokens in rows (`tail=pad`).
    pub padding_tokens: u64,
}

impl PackCounts {
    /// The counts of two packers together.
    pub fn add(&self, o: &PackCounts) -> PackCounts {
        PackCounts {
            docs: self.docs + o.docs,
            empty_docs: self.empty_docs + o.empty_docs,
            rows: self.rows + o.rows,
            tokens: self.tokens + o.tokens,
            dropped_tokens: self.dropped_tokens + o.dropped_tokens,
            padding_tokens: self.padding_tokens + o.padding_tokens,
        }
    }
}

/// Packs documents pushed in order into rows; rows are collected until [`Packer::take_rows`].
#[derive(Debug)]
pub struct Packer {
    opts: PackOptions,
    row: Vec<u32>,
    docs: Vec<u64>,
    doc_offsets: Vec<u32>,
    first_offset: u64,
    done: Vec<PackedRow>,
    counts: PackCounts,
}

impl Packer {
    /// A packer into rows of `opts.seq_len` tokens.
    pub fn new(opts: PackOptions) -> Self {
        Self {
            row: Vec::with_capacity(opts.seq_len),
            opts,
            docs: Vec::new(),
            doc_offsets: Vec::new(),
            first_offset: 0,
            done: Vec::new(),
            counts: PackCounts::default(),
        }
    }

    /// Adds document number `doc`. An empty document adds nothing, not even an EOS: a lone EOS
    /// would be a training example with no content.
    pub fn push(&mut self, doc: u64, tokens: &[u32]) {
        self.counts.docs += 1;
        if tokens.is_empty() {
            self.counts.empty_docs += 1;
            return;
        }
        let eos = self.opts.eos;
        let total = tokens.len() + usize::from(eos.is_some());
        let mut pos = 0;
        while pos < total {
            if self.row.is_empty() {
                self.first_offset = pos as u64;
            }
            self.docs.push(doc);
            self.doc_offsets.push(self.row.len() as u32);
            let take = (self.opts.seq_len - self.row.len()).min(total - pos);
            let from_tokens = take.min(tokens.len().saturating_sub(pos));
            self.row.extend_from_slice(&tokens[pos..pos + from_tokens]);
            if let (Some(e), true) = (eos, from_tokens < take) {
                self.row.push(e);
            }
            pos += take;
            if self.row.len() == self.opts.seq_len {
                self.finish_row(self.opts.seq_len);
            }
        }
    }

    /// Ends the stream: the partial last row is dropped or padded, as the options say.
    pub fn finish(&mut self) {
        let n = self.row.len();
        if n == 0 {
            return;
        }
        match self.opts.tail {
            Tail::Drop => {
                self.counts.dropped_tokens += n as u64;
                self.row.clear();
                self.docs.clear();
                self.doc_offsets.clear();
            }
            Tail::Pad(pad) => {
                self.counts.padding_tokens += (self.opts.seq_len - n) as u64;
                self.row.resize(self.opts.seq_len, pad);
                self.finish_row(n);
            }
        }
    }

    fn finish_row(&mut self, n_tokens: usize) {
        self.counts.rows += 1;
        self.counts.tokens += n_tokens as u64;
        let full = std::mem::replace(&mut self.row, Vec::with_capacity(self.opts.seq_len));
        self.done.push(PackedRow {
            tokens: full,
            n_tokens,
            docs: std::mem::take(&mut self.docs),
            doc_offsets: std::mem::take(&mut self.doc_offsets),
            first_offset: self.first_offset,
        });
    }

    /// The rows finished since the last call.
    pub fn take_rows(&mut self) -> Vec<PackedRow> {
        std::mem::take(&mut self.done)
    }

    /// The lowest document number that an unfinished row still refers to.
    pub fn oldest_pending_doc(&self) -> Option<u64> {
        self.docs.first().copied()
    }

    /// What it has packed so far.
    pub fn counts(&self) -> PackCounts {
        self.counts
    }
}

#[cfg(test)]
mod tests;

use super::*;

fn opts(seq_len: usize, eos: Option<u32>, tail: Tail) -> PackOptions {
    PackOptions { seq_len, eos, tail, segment_ids: false, ids_column: "input_ids".into(), by: Streams::Partition }
}

fn pack(o: &PackOptions, docs: &[Vec<u32>]) -> (Vec<PackedRow>, PackCounts) {
    let mut p = Packer::new(o.clone());
    for (i, d) in docs.iter().enumerate() {
        p.push(i as u64, d);
    }
    p.finish();
    (p.take_rows(), p.counts())
}

/// A small deterministic generator, so that failures reproduce.
struct Rng(u64);
impl Rng {
    fn next(&mut self, n: u64) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        (z ^ (z >> 31)) % n
    }
}

/// Rebuilds every document from the rows alone (offsets, doc numbers, first offset) and checks it
/// against the input: the property that makes packed output traceable.
fn check_exact(o: &PackOptions, docs: &[Vec<u32>]) {
    let (rows, counts) = pack(o, docs);
    let stream: Vec<u32> = docs
        .iter()
        .filter(|d| !d.is_empty())
        .flat_map(|d| d.iter().copied().chain(o.eos))
        .collect();
    let mut rebuilt: Vec<Vec<u32>> = vec![Vec::new(); docs.len()];
    let mut seen = 0usize;
    for row in &rows {
        assert_eq!(row.tokens.len(), o.seq_len);
        assert_eq!(row.doc_offsets.first(), Some(&0));
        assert_eq!(row.docs.len(), row.doc_offsets.len());
        assert_eq!(&row.tokens[..row.n_tokens], &stream[seen..seen + row.n_tokens]);
        seen += row.n_tokens;
        for (k, &doc) in row.docs.iter().enumerate() {
            let start = row.doc_offsets[k] as usize;
            let end = row.doc_offsets.get(k + 1).map_or(row.n_tokens, |&e| e as usize);
            let piece = &row.tokens[start..end];
            let starts_at = if k == 0 { row.first_offset as usize } else { 0 };
            assert_eq!(rebuilt[doc as usize].len(), starts_at, "a piece continues its document where it left off");
            rebuilt[doc as usize].extend_from_slice(piece);
        }
        if let Tail::Pad(p) = o.tail {
            assert!(row.tokens[row.n_tokens..].iter().all(|&t| t == p));
        }
    }
    assert_eq!(counts.tokens as usize, seen);
    assert_eq!(seen as u64 + counts.dropped_tokens, stream.len() as u64, "every token is in a row or counted as dropped");
    for (i, d) in docs.iter().enumerate() {
        let mut want: Vec<u32> = d.clone();
        if !d.is_empty() {
            want.extend(o.eos);
        }
        let got = &rebuilt[i];
        if o.tail == Tail::Drop {
            assert!(want.starts_with(got), "doc {i}: a prefix survives a dropped tail");
        } else {
            assert_eq!(got, &want, "doc {i}");
        }
    }
}

#[test]
fn packs_exactly_for_random_streams() {
    let mut rng = Rng(7);
    for case in 0..400 {
        let seq_len = 1 + rng.next(64) as usize;
        let eos = if case % 3 == 0 { None } else { Some(99_999) };
        let tail = if case % 2 == 0 { Tail::Drop } else { Tail::Pad(0) };
        let docs: Vec<Vec<u32>> = (0..rng.next(40))
            .map(|_| {
                let len = if rng.next(5) == 0 { 0 } else { rng.next(3 * seq_len as u64) };
                (0..len).map(|_| 1 + rng.next(50_000) as u32).collect()
            })
            .collect();
        check_exact(&opts(seq_len, eos, tail), &docs);
    }
}

#[test]
fn records_offsets_and_lineage() {
    let o = opts(4, Some(9), Tail::Drop);
    let (rows, counts) = pack(&o, &[vec![1, 2, 3, 4, 5], vec![6], vec![7, 8]]);
    // stream: 1 2 3 4 | 5 9 6 9 | 7 8 9 (dropped)
    assert_eq!(rows.len(), 2);
    assert_eq!((rows[0].docs.clone(), rows[0].doc_offsets.clone(), rows[0].first_offset), (vec![0], vec![0], 0));
    assert_eq!(rows[1].tokens, vec![5, 9, 6, 9]);
    assert_eq!((rows[1].docs.clone(), rows[1].doc_offsets.clone(), rows[1].first_offset), (vec![0, 1], vec![0, 2], 4));
    assert_eq!(counts, PackCounts { docs: 3, empty_docs: 0, rows: 2, tokens: 8, dropped_tokens: 3, padding_tokens: 0 });
}

#[test]
fn a_document_ending_on_a_row_boundary_puts_its_eos_in_the_next_row() {
    let (rows, _) = pack(&opts(3, Some(9), Tail::Pad(0)), &[vec![1, 2, 3], vec![4]]);
    assert_eq!(rows[1].tokens, vec![9, 4, 9]);
    assert_eq!((rows[1].docs.clone(), rows[1].first_offset), (vec![0, 1], 3));
}

#[test]
fn pads_the_tail_and_skips_empty_documents() {
    let (rows, counts) = pack(&opts(5, None, Tail::Pad(7)), &[vec![], vec![1, 2], vec![]]);
    assert_eq!(rows.len(), 1);
    assert_eq!((rows[0].tokens.clone(), rows[0].n_tokens, rows[0].docs.clone()), (vec![1, 2, 7, 7, 7], 2, vec![1]));
    assert_eq!((counts.empty_docs, counts.padding_tokens), (2, 3));
}

#[test]
fn finishing_a_stream_ends_its_row_and_the_next_stream_starts_a_new_one() {
    // Two sources packed as streams of their own: each tail is padded, no row mixes them.
    let mut p = Packer::new(opts(4, Some(9), Tail::Pad(0)));
    p.push(0, &[1, 2]);
    p.push(1, &[3, 4]);
    p.finish();
    p.push(2, &[5]);
    p.finish();
    let rows = p.take_rows();
    let got: Vec<_> = rows.iter().map(|r| (r.tokens.clone(), r.docs.clone(), r.first_offset)).collect();
    assert_eq!(got, [(vec![1, 2, 9, 3], vec![0, 1], 0), (vec![4, 9, 0, 0], vec![1], 1), (vec![5, 9, 0, 0], vec![2], 0)]);
    assert_eq!((p.counts().rows, p.counts().tokens, p.counts().padding_tokens), (3, 8, 4));
}

#[test]
fn parses_options_and_rejects_bad_ones() {
    let o = PackOptions::parse(2048, "eos=50256, tail=pad, pad=0, segment_ids=true", &[]).unwrap();
    assert_eq!((o.eos, o.tail, o.segment_ids), (Some(50256), Tail::Pad(0), true));
    assert_eq!(PackOptions::parse(8, "", &[]).unwrap().tail, Tail::Drop);
    assert_eq!(PackOptions::parse(8, "", &[]).unwrap().by, Streams::Partition);
    assert_eq!(PackOptions::parse(8, "by=source", &[]).unwrap().by, Streams::Source);
    for (len, bad) in [(0, ""), (8, "eos=-1"), (8, "eos=4294967296"), (8, "tail=pad"), (8, "pad=3"), (8, "tail=wrap"), (8, "frobnicate=1"), (8, "eos"), (8, "by=file")] {
        assert!(PackOptions::parse(len, bad, &[]).is_err(), "{len} {bad}");
    }
}

#[test]
fn token_strings_are_looked_up_in_the_packed_views_tokenizer_or_the_named_one() {
    let cl100k = ["tiktoken:cl100k_base".to_string()];
    let o = PackOptions::parse(8, "eos=<|endoftext|>,tail=pad,pad=<|endoftext|>", &cl100k).unwrap();
    assert_eq!((o.eos, o.tail), (Some(100257), Tail::Pad(100257)));
    let o = PackOptions::parse(8, "eos=<|endoftext|>,tokenizer=tiktoken:o200k_base", &[]).unwrap();
    assert_eq!(o.eos, Some(199999));
    let none = PackOptions::parse(8, "eos=<|endoftext|>", &[]).unwrap_err().to_string();
    assert!(none.contains("calls no tokenize()") && none.contains("tokenizer=SPEC"), "{none}");
    let two = ["tiktoken:o200k_base".to_string(), "tiktoken:cl100k_base".to_string()];
    let many = PackOptions::parse(8, "eos=<|endoftext|>", &two).unwrap_err().to_string();
    assert!(many.contains("2 tokenizers"), "{many}");
    let unknown = PackOptions::parse(8, "eos=<|nope|>", &cl100k).unwrap_err().to_string();
    assert!(unknown.contains("not in the vocabulary"), "{unknown}");
}

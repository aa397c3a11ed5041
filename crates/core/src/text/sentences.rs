//! Sentence counting as datatrove's `split_into_sentences(text, "en")` does it: spaCy's rule-based
//! `sentencizer` over the blank English tokenizer's tokens. C4's `min_num_sentences` counts these.

use std::ops::Range;

use super::py::is_punctuation;
use super::words::tokens;

/// spaCy 3.8 `Sentencizer.default_punct_chars`.
const PUNCT_CHARS: &str = "!.?։؟۔܀܁܂߹।॥၊။።፧፨᙮᜵᜶᠃᠉᥄᥅᪨᪩᪪᪫᭚᭛᭞᭟᰻᰼᱾᱿‼‽⁇⁈⁉⸮⸼꓿꘎꘏꛳꛷꡶꡷꣎꣏꤯꧈꧉꩝꩞꩟꫰꫱꯫﹒﹖﹗！．？𐩖𐩗𑁇𑁈𑂾𑂿𑃀𑃁𑅁𑅂𑅃𑇅𑇆𑇍𑇞𑇟𑈸𑈹𑈻𑈼𑊩𑑋𑑌𑗂𑗃𑗉𑗊𑗋𑗌𑗍𑗎𑗏𑗐𑗑𑗒𑗓𑗔𑗕𑗖𑗗𑙁𑙂𑜼𑜽𑜾𑩂𑩃𑪛𑪜𑱁𑱂𖩮𖩯𖫵𖬷𖬸𖭄𛲟𝪈｡。";

fn is_sentence_punct(token: &str) -> bool {
    let mut chars = token.chars();
    matches!((chars.next(), chars.next()), (Some(c), None) if PUNCT_CHARS.contains(c))
}

/// Indices of the tokens that start a sentence: the first token, and every token that is not
/// punctuation and follows a sentence-final mark (whitespace tokens count as such tokens).
fn sentence_starts(text: &str, toks: &[Range<usize>]) -> Vec<usize> {
    let mut starts = Vec::new();
    if toks.is_empty() {
        return starts;
    }
    starts.push(0);
    let mut seen_period = false;
    for (i, r) in toks.iter().enumerate() {
        let t = &text[r.clone()];
        let in_punct_chars = is_sentence_punct(t);
        if seen_period && !in_punct_chars && !t.chars().all(is_punctuation) {
            starts.push(i);
            seen_period = false;
        } else if in_punct_chars {
            seen_period = true;
        }
    }
    starts
}

/// spaCy's sentences as byte ranges of `text`, as datatrove's `span_tokenize` gives them: each
/// from its first token's start to its last token's end (`Span.start_char..end_char`), so the
/// space after a sentence's last token lies between two ranges, or after the last one.
pub fn sentence_ranges(text: &str) -> Vec<Range<usize>> {
    let toks = tokens(text);
    let starts = sentence_starts(text, &toks);
    let ends = starts.iter().skip(1).map(|&s| toks[s - 1].end).chain(toks.last().map(|t| t.end));
    starts.iter().zip(ends).map(|(&s, end)| toks[s].start..end).collect()
}

/// Number of sentences spaCy's sentencizer finds in `text`; text without tokens has none.
pub fn count_sentences(text: &str) -> usize {
    sentence_starts(text, &tokens(text)).len()
}

/// datatrove's `split_into_sentences`: the text cut at the end of each sentence but the last,
/// so that every character belongs to a piece.
pub fn split_sentences(text: &str) -> Vec<&str> {
    let toks = tokens(text);
    let starts = sentence_starts(text, &toks);
    let mut pieces = Vec::with_capacity(starts.len());
    let mut from = 0;
    for &s in starts.iter().skip(1) {
        let end = toks[s - 1].end;
        pieces.push(&text[from..end]);
        from = end;
    }
    if !starts.is_empty() {
        pieces.push(&text[from..]);
    }
    pieces
}

#[cfg(test)]
mod tests {
    use super::{count_sentences, sentence_ranges, split_sentences};

    #[test]
    fn counts_like_spacy_sentencizer() {
        // Expected counts from spaCy 3.8 blank("en") + sentencizer.
        for (text, want) in [
            ("", 0),
            ("One sentence without a stop", 1),
            ("First one. Second one! Third?", 3),
            ("Mr. Smith went home. He slept.", 2),
            ("Wait... what? Yes.", 2),
            ("He said \"stop.\" Then left.", 2),
            ("Ends with a stop.", 1),
            ("U.S. growth rose 2.5 pct in May. Analysts expected less.", 2),
        ] {
            assert_eq!(count_sentences(text), want, "{text:?}");
        }
        assert_eq!(split_sentences("One. Two!  Three"), ["One.", " Two!", "  Three"]);
        // spaCy 3.8: [(s.start_char, s.end_char) for s in nlp(text).sents]
        assert_eq!(sentence_ranges("  One. Two!  Three \n"), [0..6, 7..11, 12..20]);
        assert_eq!(sentence_ranges("Ends.\n"), [0..5, 5..6]);
        assert!(sentence_ranges("").is_empty());
    }
}

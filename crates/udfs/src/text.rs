//! The text functions in SQL, each a line over its core in `tokq_core::text`.

use std::sync::Arc;

use datafusion::logical_expr::ScalarUDF;

use crate::kit::{doc, str_fn, unary, Substrings};
use tokq_core::text::clean::{clean_text, mask_pii, normalize_text, simplify_text, Form};
use tokq_core::text::sentences::split_sentences;
use tokq_core::text::words::split_words;

/// Every text function.
pub fn functions() -> Vec<Arc<ScalarUDF>> {
    vec![
        unary::<Substrings>(
            "split_words",
            |t| Substrings::of(t, &split_words(t)),
            "Splits text into words exactly as datatrove's default word tokenizer does (spaCy's English tokenizer \
             rules: prefixes, suffixes, infixes, URLs and special cases), without whitespace tokens. The Gopher and \
             FineWeb rules count these words, so this shows what they see. NULL gives NULL.",
            "SELECT split_words('Don''t stop-me now.');",
        ),
        unary::<Substrings>(
            "split_sentences",
            |t| Substrings::of(t, &split_sentences(t)),
            "Splits text into sentences exactly as datatrove's split_into_sentences does for English (spaCy's \
             sentencizer over its English tokens): the text is cut after each sentence, so the pieces keep their \
             whitespace and join back to the text. C4's min_num_sentences and sentence dedup's min_num_sentences count \
             these. The empty text has no sentence (datatrove gives one empty piece). NULL gives NULL.",
            "SELECT split_sentences('Mr. Smith went home. He slept.');",
        ),
        unary::<String>(
            "clean_text",
            clean_text,
            "Cleans extracted text before filtering: line breaks become \\n, control characters other than tab and \
             newline (and the BOM) are removed, other whitespace runs become one space, lines lose trailing spaces, \
             more than two newlines in a row become two, and the text is trimmed. NULL gives NULL.",
            "SELECT clean_text('  a  b  ');",
        ),
        unary::<String>(
            "mask_pii",
            |t| mask_pii(t).into_owned(),
            "Replaces e-mail addresses, then public IPv4 addresses (Python's ipaddress is_global), with datatrove's \
             PIIFormatter placeholders, cycling through them. datatrove continues the cycle across a task's documents; \
             tokq restarts it per document, so output does not depend on how documents are split into tasks. \
             Text without PII is returned unchanged. NULL gives NULL.",
            "SELECT mask_pii('write to jane@corp.com');",
        ),
        unary::<String>(
            "simplify_text",
            simplify_text,
            "datatrove's simplify_text with its defaults, the text MinHash deduplication compares: lowercase, digit \
             runs (with one decimal part) to 0, punctuation to spaces, whitespace runs to one space, NFD without \
             combining marks. minhash applies it itself; this shows what a signature is computed over. NULL gives NULL.",
            "SELECT simplify_text('Héllo,  World 42!');",
        ),
        str_fn::<String>(
            "normalize_text",
            2..=2,
            |c| {
                let form = Form::parse(c.str(1, "form")?.unwrap_or_default())?;
                Ok(Box::new(move |t| Some(normalize_text(t, form))))
            },
            doc(
                "Applies a Unicode normalization form to the text, as Python's unicodedata.normalize does. \
                 The form is checked when the query is planned. NULL gives NULL.",
                "normalize_text(text, form)",
            )
            .with_argument("text", "The text to normalize.")
            .with_argument("form", "A constant: 'NFC', 'NFKC', 'NFD' or 'NFKD' (any case).")
            .with_sql_example("```sql\nSELECT normalize_text('ﬁne', 'NFKC');\n```")
            .build(),
        ),
    ]
}

//! A text as an encoder's input: the model folder's own tokenizer, its special tokens around the
//! text, and truncation to the model's maximum length, as `transformers`' tokenizer call
//! `tokenizer(text, truncation=True)` gives them.

use std::path::Path;
use std::sync::Arc;

use crate::tokenize::hf::{HfTokenizer, Template};
use crate::tokenize::{cached, Tokenizer};

/// The tokenizer of a model folder, with what it adds around a text.
pub(crate) struct Input {
    tokenizer: Arc<Tokenizer>,
    template: Template,
    /// How many of the text's own ids fit beside the special tokens.
    room: usize,
}

/// `model_max_length` of `tokenizer_config.json`, where the file gives a usable one
/// (transformers writes a huge number for "none").
fn tokenizer_max_length(dir: &Path) -> Option<usize> {
    let text = String::from_utf8(crate::load::read_file(&dir.join("tokenizer_config.json")).ok()?).ok()?;
    let v: serde_json::Value = serde_json::from_str(&text).ok()?;
    v["model_max_length"]
        .as_u64()
        .filter(|&n| n < 1 << 40)
        .map(|n| n as usize)
}

impl Input {
    /// The tokenizer of `dir` for an encoder placing at most `max_tokens` tokens over `vocab`
    /// embeddings; an error names the file and what does not fit.
    pub(crate) fn load(
        dir: &Path,
        max_tokens: usize,
        vocab: usize,
    ) -> Result<Self, (String, String)> {
        let file = dir.join("tokenizer.json");
        let name = file.display().to_string();
        // The special tokens and the size come from the `tokenizers` crate's reading of the file:
        // the encoder's own where it is that (WordPiece), a second load where tokq encodes (or
        // the encoder did not load: then the file's own error).
        let tokenizer = cached(&name);
        let own;
        let probe = match tokenizer.as_ref().ok().and_then(|t| t.as_hf()) {
            Some(hf) => hf,
            None => {
                let bytes = crate::load::read_file(&file).map_err(|e| (name.clone(), e))?;
                own = HfTokenizer::from_bytes(&bytes)
                    .map_err(|e| (name.clone(), format!("not a valid tokenizer.json: {e}")))?
                    .0;
                &own
            }
        };
        if probe.vocab_size() > vocab {
            return Err((name, format!("gives ids up to {} but the model has {vocab} embeddings (config.json's vocab_size): the tokenizer is not the model's", probe.vocab_size() - 1)));
        }
        let template = probe.template().map_err(|e| (name.clone(), e))?;
        let max = tokenizer_max_length(dir).map_or(max_tokens, |n| n.min(max_tokens));
        let room = max
            .checked_sub(template.before.len() + template.after.len())
            .filter(|&r| r > 0);
        let room = room.ok_or_else(|| {
            (
                name.clone(),
                format!("a maximum length of {max} leaves no room beside the special tokens"),
            )
        })?;
        let tokenizer = tokenizer.map_err(|e| (name, e.to_string()))?;
        Ok(Self {
            tokenizer,
            template,
            room,
        })
    }

    /// The ids and type ids of `text` as the model reads it, into `ids` and `types`.
    pub(crate) fn encode(
        &self,
        text: &str,
        ids: &mut Vec<u32>,
        types: &mut Vec<u32>,
    ) -> crate::Result<()> {
        ids.clear();
        types.clear();
        let Template {
            before,
            after,
            sequence_type,
        } = &self.template;
        ids.extend(before.iter().map(|&(id, _)| id));
        types.extend(before.iter().map(|&(_, t)| t));
        self.tokenizer.encode_head(text, self.room, ids)?;
        types.resize(ids.len(), *sequence_type);
        ids.extend(after.iter().map(|&(id, _)| id));
        types.extend(after.iter().map(|&(_, t)| t));
        Ok(())
    }
}

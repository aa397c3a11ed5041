//! Unit tests on small models written here in fastText's format. Parity with the fastText
//! library itself, on real and trained models, is `tests/parity/fasttext_parity.py`.

use proptest::prelude::*;

use super::*;

/// A dense supervised model in fastText's file format.
struct Spec {
    loss: i32,
    dim: usize,
    words: Vec<&'static str>,
    labels: Vec<(&'static str, i64)>,
    bucket: usize,
    minn: i32,
    maxn: i32,
    word_ngrams: i32,
}

impl Spec {
    fn small(loss: i32) -> Self {
        Self {
            loss,
            dim: 4,
            words: vec!["</s>", "hello", "world", "bonjour"],
            labels: vec![("__label__en", 5), ("__label__fr", 3), ("__label__de", 1)],
            bucket: 16,
            minn: 2,
            maxn: 3,
            word_ngrams: 2,
        }
    }

    fn bytes(&self) -> Vec<u8> {
        let mut b = Vec::new();
        let i32s = |b: &mut Vec<u8>, v: &[i32]| v.iter().for_each(|x| b.extend_from_slice(&x.to_le_bytes()));
        i32s(&mut b, &[793_712_314, 12]);
        i32s(&mut b, &[self.dim as i32, 5, 5, 1, 5, self.word_ngrams, self.loss, 3, self.bucket as i32, self.minn, self.maxn, 100]);
        b.extend_from_slice(&1e-4f64.to_le_bytes());
        let size = (self.words.len() + self.labels.len()) as i32;
        i32s(&mut b, &[size, self.words.len() as i32, self.labels.len() as i32]);
        b.extend_from_slice(&100i64.to_le_bytes());
        b.extend_from_slice(&(-1i64).to_le_bytes());
        let entries = self.words.iter().map(|w| (*w, 1i64, 0u8)).chain(self.labels.iter().map(|(l, c)| (*l, *c, 1u8)));
        for (word, count, kind) in entries {
            b.extend_from_slice(word.as_bytes());
            b.push(0);
            b.extend_from_slice(&count.to_le_bytes());
            b.push(kind);
        }
        let matrix = |b: &mut Vec<u8>, rows: usize, seed: f32| {
            b.push(0);
            b.extend_from_slice(&(rows as i64).to_le_bytes());
            b.extend_from_slice(&(self.dim as i64).to_le_bytes());
            for i in 0..rows * self.dim {
                b.extend_from_slice(&(((i as f32 * seed).sin()) * 0.5).to_le_bytes());
            }
        };
        matrix(&mut b, self.words.len() + self.bucket, 0.37);
        matrix(&mut b, self.labels.len(), 1.13);
        b
    }

    fn model(&self) -> Model {
        Model::from_bytes("test.bin", &self.bytes()).unwrap()
    }
}

#[test]
fn labels_lose_the_prefix_and_are_found_either_way() {
    let m = Spec::small(3).model();
    let labels: Vec<&str> = m.labels().iter().map(|l| &**l).collect();
    assert_eq!(labels, ["en", "fr", "de"]);
    assert_eq!((m.label_index("fr"), m.label_index("__label__de"), m.label_index("xx")), (Some(1), Some(2), None));
}

#[test]
fn softmax_and_one_vs_all_rank_every_label_and_score_is_consistent() {
    for loss in [3, 4, 2] {
        let m = Spec::small(loss).model();
        let all = m.predict("hello world, hello unknown-word", usize::MAX);
        assert_eq!(all.len(), 3, "loss {loss}");
        assert!(all.windows(2).all(|w| w[0].score >= w[1].score), "loss {loss}: {all:?}");
        // Among equal scores, which label a smaller k keeps is fastText's heap's business: compare scores.
        assert_eq!(m.predict("hello world, hello unknown-word", 1)[0].score, all[0].score);
        for p in &all {
            assert_eq!(m.score("hello world, hello unknown-word", p.label), p.score);
        }
        if loss == 3 {
            let total: f32 = all.iter().map(|p| p.score).sum();
            assert!((total - 1.0 - 3e-5).abs() < 1e-5, "{total}");
        }
    }
}

#[test]
fn hierarchical_softmax_probabilities_sum_to_one() {
    let m = Spec::small(1).model();
    let all = m.predict("bonjour world", usize::MAX);
    let total: f32 = all.iter().map(|p| p.score - 1e-5).sum();
    assert!((total - 1.0).abs() < 1e-4, "{all:?}");
}

#[test]
fn newlines_separate_words_like_spaces_and_empty_text_still_predicts() {
    let m = Spec::small(3).model();
    assert_eq!(m.predict("hello\nworld\r\n", 3), m.predict("hello world", 3));
    // `</s>` alone: fastText predicts from the end-of-line token.
    assert_eq!(m.predict("", 3).len(), 3);
    // Text after a literal `</s>` is not read, as in fastText.
    assert_eq!(m.predict("hello </s> bonjour bonjour", 3), m.predict("hello", 3));
}

#[test]
fn corrupt_or_truncated_files_fail_with_the_file_name() {
    let bytes = Spec::small(3).bytes();
    for cut in [0, 3, 9, 40, 70, bytes.len() / 2, bytes.len() - 1] {
        let e = Model::from_bytes("m.ftz", &bytes[..cut]).err().expect("a truncated model must fail").to_string();
        assert!(e.starts_with("fastText model m.ftz: "), "{e}");
        assert!(!e.contains('\n'), "{e}");
    }
    // A dictionary size far beyond the file fails at once instead of reserving memory for it.
    let mut huge = bytes.clone();
    let at = 8 + 12 * 4 + 8; // header, twelve int arguments, t
    huge[at..at + 4].copy_from_slice(&(i32::MAX - 1).to_le_bytes());
    huge[at + 4..at + 8].copy_from_slice(&(i32::MAX - 4).to_le_bytes()); // words; 3 labels
    let e = Model::from_bytes("m.bin", &huge).err().unwrap().to_string();
    assert!(e.contains("more than the file holds"), "{e}");
    let mut wrong = bytes.clone();
    wrong[0] ^= 1;
    assert!(Model::from_bytes("m.bin", &wrong).err().unwrap().to_string().contains("wrong magic number"));
    let e = Model::load("/nonexistent/lid.176.ftz").err().unwrap().to_string();
    assert!(e.contains("/nonexistent/lid.176.ftz"), "{e}");
}

#[test]
fn a_pinned_model_loads_only_with_its_hash_and_is_recorded() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("m.bin");
    let bytes = Spec::small(3).bytes();
    std::fs::write(&file, &bytes).unwrap();
    let (path, hash) = (file.display().to_string(), crate::tokenize::sha256_hex(&bytes));
    assert!(Model::load(&format!("{path}#sha256={hash}")).is_ok());
    assert!(Model::load(&format!("{path}#sha256={}", hash.to_uppercase())).is_ok(), "hex in either case");
    assert_eq!(crate::load::loaded_models().get(&path), Some(&hash), "the stats can name it");
    // One flipped weight: the model still parses, so only the pin catches it.
    let mut damaged = bytes.clone();
    let last = damaged.len() - 2;
    damaged[last] ^= 0x40;
    std::fs::write(&file, &damaged).unwrap();
    assert!(Model::load(&path).is_ok(), "a damaged fastText file loads without a pin");
    let e = Model::load(&format!("{path}#sha256={hash}")).err().unwrap().to_string();
    let got = crate::tokenize::sha256_hex(&damaged);
    assert_eq!(e, format!("fastText model {path}: its sha256 is {got}, not the pinned {hash}: the file is damaged or another one; download it again, or pin the new hash"));
    let e = Model::load(&format!("{path}#sha256=abc")).err().unwrap().to_string();
    assert!(e.contains("'abc' is not a sha256") && e.contains("sha256sum FILE"), "{e}");
}

proptest! {
    #[test]
    fn arbitrary_text_never_panics_and_shortcuts_agree_with_all_labels(text in any::<String>()) {
        for loss in [1, 2, 3, 4] {
            let m = Spec::small(loss).model();
            let all = m.predict(&text, usize::MAX);
            prop_assert!(all.iter().all(|p| p.score.is_finite()));
            prop_assert_eq!(m.best(&text), all.first().cloned());
            for label in 0..m.labels().len() {
                let want = all.iter().find(|p| p.label == label).map_or(0.0, |p| p.score);
                prop_assert_eq!(m.score(&text, label), want);
            }
        }
    }

    #[test]
    fn arbitrary_bytes_and_corruptions_never_panic(at in 0usize..400, byte in any::<u8>(), noise in proptest::collection::vec(any::<u8>(), 0..64)) {
        let mut bytes = Spec::small(1).bytes();
        let at = at.min(bytes.len() - 1);
        bytes[at] = byte;
        if let Ok(m) = Model::from_bytes("m.bin", &bytes) {
            let _ = m.predict("hello world bonjour", usize::MAX);
        }
        let _ = Model::from_bytes("noise.bin", &noise);
    }
}

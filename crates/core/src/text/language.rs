//! Language identification: whatlang's embedded trigram model (69 languages, no files, the
//! default), or a fastText model such as lid.176 or GlotLID, decided as datatrove's
//! `LanguageFilter` decides.

use isolang::Language;
use whatlang::Script;

use crate::fasttext::Model;

/// A language guess: its code and score.
#[derive(Debug, Clone, PartialEq)]
pub struct Detected {
    /// ISO 639-1 where the language has one (as fastText's lid.176 reports), else ISO 639-3;
    /// a fastText model's label as it is (GlotLID's without its `_Script` part).
    pub lang: String,
    /// The ISO 639-3 code, when known.
    pub iso639_3: Option<String>,
    /// The ISO 15924 script: GlotLID's label part, whatlang's script; NULL for lid.176.
    pub script: Option<String>,
    /// The model's confidence, 0 to 1 (fastText's probability as fastText reports it).
    pub score: f64,
}

/// ISO 639-1 of a whatlang (ISO 639-3) code. Mandarin and Iranian Persian have no 639-1 code of
/// their own; they are reported as their macrolanguages, as fastText does.
fn iso639_1(code: &'static str) -> String {
    match code {
        "cmn" => "zh".into(),
        "pes" => "fa".into(),
        _ => Language::from_639_3(code).and_then(|l| l.to_639_1()).unwrap_or(code).to_string(),
    }
}

/// ISO 15924 code of a whatlang script.
fn iso15924(script: Script) -> &'static str {
    match script {
        Script::Arabic => "Arab",
        Script::Armenian => "Armn",
        Script::Bengali => "Beng",
        Script::Cyrillic => "Cyrl",
        Script::Devanagari => "Deva",
        Script::Ethiopic => "Ethi",
        Script::Georgian => "Geor",
        Script::Greek => "Grek",
        Script::Gujarati => "Gujr",
        Script::Gurmukhi => "Guru",
        Script::Hangul => "Hang",
        Script::Hebrew => "Hebr",
        Script::Hiragana => "Hira",
        Script::Kannada => "Knda",
        Script::Katakana => "Kana",
        Script::Khmer => "Khmr",
        Script::Latin => "Latn",
        Script::Malayalam => "Mlym",
        Script::Mandarin => "Hani",
        Script::Myanmar => "Mymr",
        Script::Oriya => "Orya",
        Script::Sinhala => "Sinh",
        Script::Tamil => "Taml",
        Script::Telugu => "Telu",
        Script::Thai => "Thai",
    }
}

/// The most likely language of `text`, or None when the text has no letters to go on.
pub fn detect_language(text: &str) -> Option<Detected> {
    let info = whatlang::detect(text)?;
    let code = info.lang().code();
    Some(Detected {
        lang: iso639_1(code),
        iso639_3: Some(code.to_string()),
        script: Some(iso15924(info.script()).to_string()),
        score: info.confidence(),
    })
}

/// The language a fastText identification model gives `text`: its best label over all labels
/// (datatrove predicts with `k=-1` and takes the maximum), None only when the model gives none.
/// A label `xxx_Scrp` (GlotLID) is split into the language and the script, as datatrove does.
pub fn detect_language_fasttext(model: &Model, text: &str) -> Option<Detected> {
    let best = model.best(text)?;
    let label = &*model.labels()[best.label];
    let (lang, script) = match label.split_once('_') {
        Some((lang, script)) => (lang, Some(script.to_string())),
        None => (label, None),
    };
    let iso639_3 = match lang.len() {
        2 => Language::from_639_1(lang).map(|l| l.to_639_3().to_string()),
        3 => Some(lang.to_string()),
        _ => None,
    };
    Some(Detected { lang: lang.to_string(), iso639_3, script, score: best.score as f64 })
}

#[cfg(test)]
mod tests {
    use super::detect_language;

    #[test]
    fn detects_and_reports_iso_codes() {
        let d = detect_language("All human beings are born free and equal in dignity and rights. They are endowed with reason and conscience and should act towards one another in a spirit of brotherhood.").unwrap();
        assert_eq!((d.lang.as_str(), d.iso639_3.as_deref(), d.script.as_deref()), ("en", Some("eng"), Some("Latn")));
        assert!(d.score > 0.5);
        let d = detect_language("人人生而自由，在尊严和权利上一律平等。他们赋有理性和良心，并应以兄弟关系的精神相对待。").unwrap();
        assert_eq!((d.lang.as_str(), d.iso639_3.as_deref()), ("zh", Some("cmn")));
        let d = detect_language("Alle Menschen sind frei und gleich an Würde und Rechten geboren.").unwrap();
        assert_eq!(d.lang, "de");
        assert_eq!(detect_language(""), None);
        assert_eq!(detect_language("1234 5678"), None);
    }
}

//! Language identification with whatlang's embedded trigram model (69 languages, no files to
//! download, deterministic).

use isolang::Language;

#[derive(Debug, Clone, PartialEq)]
pub struct Detected {
    /// ISO 639-1 where the language has one (as fastText's lid.176 reports), else ISO 639-3.
    pub lang: String,
    pub iso639_3: &'static str,
    /// whatlang's confidence, 0 to 1.
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

/// The most likely language of `text`, or None when the text has no letters to go on.
pub fn detect_language(text: &str) -> Option<Detected> {
    let info = whatlang::detect(text)?;
    let code = info.lang().code();
    Some(Detected { lang: iso639_1(code), iso639_3: code, score: info.confidence() })
}

#[cfg(test)]
mod tests {
    use super::detect_language;

    #[test]
    fn detects_and_reports_iso_codes() {
        let d = detect_language("All human beings are born free and equal in dignity and rights. They are endowed with reason and conscience and should act towards one another in a spirit of brotherhood.").unwrap();
        assert_eq!((d.lang.as_str(), d.iso639_3), ("en", "eng"));
        assert!(d.score > 0.5);
        let d = detect_language("人人生而自由，在尊严和权利上一律平等。他们赋有理性和良心，并应以兄弟关系的精神相对待。").unwrap();
        assert_eq!((d.lang.as_str(), d.iso639_3), ("zh", "cmn"));
        let d = detect_language("Alle Menschen sind frei und gleich an Würde und Rechten geboren.").unwrap();
        assert_eq!(d.lang, "de");
        assert_eq!(detect_language(""), None);
        assert_eq!(detect_language("1234 5678"), None);
    }
}

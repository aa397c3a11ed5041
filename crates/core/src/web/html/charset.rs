//! Bytes to text as a browser decides the encoding: a byte-order mark, then the charset of the
//! HTTP `Content-Type`, then a `<meta charset>` or `http-equiv` declaration near the top, then
//! UTF-8 when the bytes are valid UTF-8, then chardetng's guess (Firefox's detector). A declared
//! UTF-8 that is not valid UTF-8 is a common lie, so detection decides then.

use encoding_rs::{Encoding, UTF_8};

/// How far into a page a `<meta>` declaration is looked for (browsers prescan 1024 bytes; pages
/// with long `<head>`s put it later, and looking further costs nothing).
const META_PRESCAN: usize = 4096;

fn label_after_charset(text: &str) -> Option<&'static Encoding> {
    let at = text.find("charset=")?;
    let rest = text[at + 8..].trim_start_matches(['"', '\'', ' ']);
    let end = rest.find(|c: char| !(c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | ':' | '.'))).unwrap_or(rest.len());
    Encoding::for_label(rest[..end].as_bytes())
}

/// The charset a page declares in its first bytes.
fn meta_charset(bytes: &[u8]) -> Option<&'static Encoding> {
    let head = &bytes[..bytes.len().min(META_PRESCAN)];
    let text = String::from_utf8_lossy(head).to_ascii_lowercase();
    // `<meta charset=...>` and `<meta http-equiv content="text/html; charset=...">` alike.
    let meta = text.match_indices("<meta").find_map(|(at, _)| {
        let tag = &text[at..text[at..].find('>').map_or(text.len(), |e| at + e)];
        label_after_charset(tag)
    })?;
    // A page that says UTF-16 in ASCII bytes is not UTF-16 (the HTML standard's rule).
    Some(if meta == encoding_rs::UTF_16LE || meta == encoding_rs::UTF_16BE { UTF_8 } else { meta })
}

/// The charset of an HTTP `Content-Type` value.
fn header_charset(content_type: &str) -> Option<&'static Encoding> {
    label_after_charset(&content_type.to_ascii_lowercase().replace("charset = ", "charset="))
}

/// The page's text.
pub fn decode<'b>(bytes: &'b [u8], content_type: Option<&str>) -> std::borrow::Cow<'b, str> {
    if let Some((enc, _)) = Encoding::for_bom(bytes) {
        return enc.decode_with_bom_removal(bytes).0;
    }
    let utf8 = std::str::from_utf8(bytes).ok();
    let declared = content_type.and_then(header_charset).or_else(|| meta_charset(bytes));
    let enc = match (declared, utf8) {
        (Some(e), Some(text)) if e == UTF_8 => return text.into(),
        (Some(e), _) if e != UTF_8 => e,
        (_, Some(text)) => return text.into(),
        _ => {
            let mut d = chardetng::EncodingDetector::new(chardetng::Iso2022JpDetection::Deny);
            d.feed(bytes, true);
            d.guess(None, chardetng::Utf8Detection::Allow)
        }
    };
    enc.decode_without_bom_handling(bytes).0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_header_then_meta_then_utf8_then_detection_decides() {
        let cafe_1252 = b"<p>caf\xe9 cr\xe8me br\xfbl\xe9e</p>";
        assert_eq!(decode(cafe_1252, Some("text/html; charset=windows-1252")), "<p>café crème brûlée</p>");
        assert_eq!(decode(cafe_1252, Some("text/html; Charset = \"ISO-8859-1\"")), "<p>café crème brûlée</p>");
        // Declared UTF-8 that is not: detected.
        assert!(decode(cafe_1252, Some("text/html; charset=utf-8")).contains("café"));
        let meta = b"<html><head><meta http-equiv=\"Content-Type\" content=\"text/html; charset=shift_jis\"></head>\x82\xb1\x82\xf1\x82\xc9\x82\xbf\x82\xcd";
        assert!(decode(meta, None).ends_with("こんにちは"));
        let (gb, _, _) = encoding_rs::GB18030.encode("<meta charset=gb18030><p>中文网页的正文内容</p>");
        assert!(decode(&gb, Some("text/html")).contains("中文网页的正文内容"));
        // No declaration, not UTF-8: chardetng.
        let (sjis, _, _) = encoding_rs::SHIFT_JIS.encode("<p>日本語のウェブページの本文です。これは長い文章です。</p>");
        assert!(decode(&sjis, None).contains("日本語のウェブページ"));
        assert_eq!(decode("\u{feff}<p>bom</p>".as_bytes(), Some("text/html; charset=latin1")), "<p>bom</p>");
        assert_eq!(decode("<p>ü</p>".as_bytes(), None), "<p>ü</p>");
        assert_eq!(decode(b"<meta charset=\"utf-16\"><p>x</p>", None), "<meta charset=\"utf-16\"><p>x</p>");
    }
}

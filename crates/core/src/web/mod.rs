//! The raw web: URL parts as tldextract splits them and datatrove's URL filter, WARC records and
//! their HTTP payloads, and the main text of HTML pages. Pure functions over `&str` and `&[u8]`; the engine reads the files.

pub mod html;
pub mod http;
pub mod suffix;
pub mod url;
pub mod url_filter;
pub mod warc;

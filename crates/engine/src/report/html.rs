//! The report as one HTML page: inline CSS, bars as sized blocks, no script and no network.

use std::collections::BTreeMap;
use std::fmt::Write;

use serde_json::Value;

use super::{Histogram, Report};

const STYLE: &str = "body{font:14px/1.45 system-ui,sans-serif;margin:24px auto;max-width:1100px;color:#1b1f24;padding:0 16px}\
h1{font-size:22px}h2{font-size:17px;margin-top:28px;border-bottom:1px solid #d0d7de;padding-bottom:4px}\
table{border-collapse:collapse;margin:8px 0}td,th{padding:3px 10px;border-bottom:1px solid #eaeef2;text-align:left;vertical-align:top}\
td.n{text-align:right;font-variant-numeric:tabular-nums}.bar{height:12px;background:#0969da;display:inline-block;vertical-align:middle}\
.bar.after{background:#1a7f37}svg.cores polyline{fill:none;stroke:#8250df;stroke-width:1.5}svg.cores .top{stroke:#d0d7de;stroke-dasharray:3}.bar.drop{background:#cf222e}.bar.time{background:#8250df}.ok{color:#1a7f37}.bad{color:#cf222e}\
.legend span{display:inline-block;width:10px;height:10px;margin:0 4px 0 12px}code{font-size:12px}.muted{color:#57606a}";

fn esc(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}

/// A block `value / max` of 320 px wide.
fn bar(class: &str, value: f64, max: f64) -> String {
    let px = if max > 0.0 { (320.0 * value / max).round().max(if value > 0.0 { 1.0 } else { 0.0 }) } else { 0.0 };
    format!("<span class=\"bar {class}\" style=\"width:{px}px\"></span>")
}

/// Cores busy over a statement's time as a small line chart (an inline SVG, 160 x 28 px), with
/// the partitions as its top: a flat line below the top is a statement that leaves cores idle.
fn cores_chart(busy: &[f64], partitions: f64) -> String {
    let busy: Vec<f64> = match busy {
        [] => return String::new(),
        [one] => vec![*one, *one],
        many => many.to_vec(),
    };
    let top = busy.iter().copied().fold(partitions.max(1.0), f64::max);
    let step = 160.0 / (busy.len() - 1) as f64;
    let points: Vec<String> = busy.iter().enumerate().map(|(i, b)| format!("{:.1},{:.1}", i as f64 * step, 28.0 - 26.0 * b / top)).collect();
    format!(
        "<svg class=cores width=160 height=28 viewBox=\"0 0 160 28\"><title>cores busy over time (top: {partitions} partitions)</title>\
         <line x1=0 y1=2 x2=160 y2=2 class=top /><polyline points=\"{}\" /></svg>",
        points.join(" ")
    )
}

fn num(v: &Value) -> u64 {
    v.as_u64().unwrap_or(0)
}

/// Rows per bin of one or two histograms over the same bins.
fn histogram_table(out: &mut String, title: &str, series: &[(&str, &str, &Histogram)]) {
    let keys: std::collections::BTreeSet<i64> = series.iter().flat_map(|(_, _, h)| h.bins.keys().copied()).collect();
    if keys.is_empty() {
        return;
    }
    let max = series.iter().flat_map(|(_, _, h)| h.bins.values()).copied().max().unwrap_or(0) as f64;
    let _ = write!(out, "<h3>{}</h3><p class=legend>", esc(title));
    for (name, class, _) in series {
        let color = if *class == "after" { "#1a7f37" } else { "#0969da" };
        let _ = write!(out, "<span style=\"background:{color}\"></span>{}", esc(name));
    }
    out.push_str("</p><table><tr><th>range</th>");
    for (name, _, _) in series {
        let _ = write!(out, "<th>{}</th>", esc(name));
    }
    out.push_str("<th></th></tr>");
    let label_of = series[0].2;
    for k in keys {
        let _ = write!(out, "<tr><td>{}</td>", label_of.label(k));
        for (_, _, h) in series {
            let _ = write!(out, "<td class=n>{}</td>", h.bins.get(&k).copied().unwrap_or(0));
        }
        out.push_str("<td>");
        for (_, class, h) in series {
            out.push_str(&bar(class, h.bins.get(&k).copied().unwrap_or(0) as f64, max));
            out.push_str("<br>");
        }
        out.push_str("</td></tr>");
    }
    out.push_str("</table>");
}

fn drops(out: &mut String, reasons: &BTreeMap<String, u64>) {
    let mut by_filter: BTreeMap<&str, Vec<(&str, u64)>> = BTreeMap::new();
    for (reason, n) in reasons {
        let (filter, why) = reason.split_once(':').unwrap_or((reason, ""));
        by_filter.entry(filter).or_default().push((why, *n));
    }
    let mut filters: Vec<(&str, u64, Vec<(&str, u64)>)> = by_filter.into_iter().map(|(f, r)| (f, r.iter().map(|x| x.1).sum(), r)).collect();
    filters.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
    let max = filters.first().map_or(0, |f| f.1) as f64;
    out.push_str("<table><tr><th>filter</th><th>reason</th><th>rows</th><th></th></tr>");
    for (filter, total, mut reasons) in filters {
        reasons.sort_by(|a, b| b.1.cmp(&a.1));
        let _ = write!(out, "<tr><td><b>{}</b></td><td></td><td class=n><b>{total}</b></td><td>{}</td></tr>", esc(filter), bar("drop", total as f64, max));
        for (why, n) in reasons.into_iter().filter(|(why, _)| !why.is_empty()) {
            let _ = write!(out, "<tr><td></td><td>{}</td><td class=n>{n}</td><td>{}</td></tr>", esc(why), bar("drop", n as f64, max));
        }
    }
    out.push_str("</table>");
}

pub fn page(r: &Report) -> String {
    let s = &r.stats;
    let mut out = String::new();
    let recipe = s["recipe"].as_str().unwrap_or("?");
    let _ = write!(
        out,
        "<!doctype html><html lang=en><head><meta charset=utf-8><title>tokq report: {}</title><style>{STYLE}</style></head><body>",
        esc(recipe)
    );
    let _ = write!(
        out,
        "<h1>tokq run of <code>{}</code></h1><p class=muted>recipe sha256 <code>{}</code> &middot; {:.2} s wall &middot; {} documents from {} input files &middot; {} rows and {:.1} MB read by all statements &middot; {} bad rows skipped</p>",
        esc(recipe),
        esc(s["recipe_sha256"].as_str().unwrap_or("")),
        s["wall_seconds"].as_f64().unwrap_or(0.0),
        num(&s["documents_read"]),
        s["documents"].as_object().map_or(0, |d| d.len()),
        num(&s["rows_read"]),
        num(&s["bytes_read"]) as f64 / 1e6,
        num(&s["bad_rows_skipped"]),
    );
    if let Some(e) = s["error"].as_str() {
        let _ = write!(out, "<p class=bad><b>The run failed:</b> {}</p>", esc(e));
    }

    out.push_str("<h2>Accounting</h2><table><tr><th>statement</th><th>input rows</th><th>kept</th><th>rejected</th><th></th><th>kept in</th><th>rejects in</th></tr>");
    for a in s["accounting"].as_array().into_iter().flatten() {
        let (input, kept, rejected) = (num(&a["input_rows"]), num(&a["kept"]), num(&a["rejected"]));
        let balance = if input == kept + rejected { "<span class=ok>every row accounted for</span>".to_string() } else { format!("<span class=bad>{} rows unaccounted</span>", input as i64 - (kept + rejected) as i64) };
        let _ = write!(
            out,
            "<tr><td class=n>{}</td><td class=n>{input}</td><td class=n>{kept}</td><td class=n>{rejected}</td><td>{balance}</td><td><code>{}</code></td><td><code>{}</code></td></tr>",
            num(&a["statement"]),
            esc(a["kept_target"].as_str().unwrap_or("")),
            esc(a["rejects_target"].as_str().unwrap_or(""))
        );
    }
    out.push_str("</table>");

    for stage in &r.stages {
        let _ = write!(out, "<h2>Statement {}: drops per filter and reason</h2>", stage.statement);
        drops(&mut out, &stage.reasons);
        histogram_table(&mut out, "Document length in characters", &[("before (kept + rejected)", "", &stage.chars_before), ("after (kept)", "after", &stage.chars_after)]);
        histogram_table(&mut out, "Duplicate clusters by size (documents in the cluster)", &[("clusters", "", &stage.cluster_sizes)]);
    }

    if !r.tokens.is_empty() {
        out.push_str("<h2>Tokens per row</h2>");
        for (target, h) in &r.tokens {
            histogram_table(&mut out, target, &[("rows", "", h)]);
        }
    }

    out.push_str("<h2>Statements</h2><table><tr><th>#</th><th>where</th><th>first line</th><th>seconds</th><th>rows read</th><th>MB/s</th><th>CPU s</th><th>cores busy</th><th>over time</th><th></th></tr>");
    let partitions = s["partitions"].as_f64().unwrap_or(1.0);
    let statements = s["statements"].as_array().cloned().unwrap_or_default();
    let slowest = statements.iter().map(|t| t["seconds"].as_f64().unwrap_or(0.0)).fold(0.0, f64::max);
    for t in &statements {
        let secs = t["seconds"].as_f64().unwrap_or(0.0);
        let mbs = num(&t["bytes_read"]) as f64 / 1e6 / secs.max(1e-9);
        let cpu = &t["cpu"];
        let (cpu_secs, busy) = match cpu["cpu_seconds"].as_f64() {
            Some(c) => (format!("{c:.1}"), format!("{:.2}", cpu["cores_busy"].as_f64().unwrap_or(0.0))),
            None => (String::new(), String::new()),
        };
        let series: Vec<f64> = cpu["busy"].as_array().into_iter().flatten().filter_map(Value::as_f64).collect();
        let _ = write!(
            out,
            "<tr><td class=n>{}</td><td><code>{}:{}</code></td><td><code>{}</code></td><td class=n>{secs:.3}</td><td class=n>{}</td><td class=n>{mbs:.1}</td><td class=n>{cpu_secs}</td><td class=n>{busy}</td><td>{}</td><td>{}</td></tr>",
            num(&t["number"]),
            esc(t["file"].as_str().unwrap_or("")),
            num(&t["line"]),
            esc(t["sql"].as_str().unwrap_or("")),
            num(&t["rows_read"]),
            cores_chart(&series, partitions),
            bar("time", secs, slowest)
        );
    }
    out.push_str("</table>");

    out.push_str("<h2>Outputs</h2><table><tr><th>folder</th><th>files</th><th>rows</th><th>tokens</th><th>padding</th><th>MB</th></tr>");
    for o in s["outputs"].as_array().into_iter().flatten() {
        let _ = write!(
            out,
            "<tr><td><code>{}</code></td><td class=n>{}</td><td class=n>{}</td><td class=n>{}</td><td class=n>{}</td><td class=n>{:.2}</td></tr>",
            esc(o["target"].as_str().unwrap_or("")),
            num(&o["files"]),
            num(&o["rows"]),
            num(&o["tokens"]),
            num(&o["padding_tokens"]),
            num(&o["bytes"]) as f64 / 1e6
        );
    }
    out.push_str("</table><p class=muted>Made by <code>tokq report</code> from the run's --stats-json and the folders it wrote.</p></body></html>\n");
    out
}

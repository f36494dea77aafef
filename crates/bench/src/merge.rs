//! `--merge FILE…`: the side-by-side table of docs/comparison.md from the JSON reports of
//! several runs (`crates/bench/compare/run` makes them): for each token workload and server,
//! token responses per server CPU-second with their share of the signing ceiling, per
//! connection count, and the p99 of the paced run. Several runs of one cell show as a range.

use std::collections::BTreeMap;
use std::path::PathBuf;

use anyhow::{anyhow, Context, Result};
use serde_json::Value;

/// One cell's figures, over every run that gave one.
#[derive(Debug, Default)]
struct Cell {
    /// Token responses per server CPU-second, closed loop.
    per_cpu_second: Vec<f64>,
    ceiling_percent: Vec<f64>,
    /// p99 of the paced runs, in ms.
    paced_p99_ms: Vec<f64>,
}

/// (workload, server, connections).
type Key = (String, String, u64);

/// Reads the reports and prints the table.
pub fn merge(paths: &[PathBuf]) -> Result<String> {
    let mut cells: BTreeMap<Key, Cell> = BTreeMap::new();
    for path in paths {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("cannot read {}", path.display()))?;
        let report: Value = serde_json::from_str(&text)
            .with_context(|| format!("{} is not a bench report", path.display()))?;
        let results = report["results"]
            .as_array()
            .ok_or_else(|| anyhow!("{} has no results", path.display()))?;
        for row in results {
            add(&mut cells, row).with_context(|| format!("in {}", path.display()))?;
        }
    }
    Ok(table(&cells))
}

fn add(cells: &mut BTreeMap<Key, Cell>, row: &Value) -> Result<()> {
    let text = |field: &str| {
        row[field]
            .as_str()
            .map(str::to_owned)
            .ok_or_else(|| anyhow!("a row without {field}"))
    };
    let workload = text("workload")?;
    if !matches!(workload.as_str(), "refresh" | "exchange") {
        return Ok(());
    }
    let connections = row["connections"]
        .as_u64()
        .ok_or_else(|| anyhow!("a row without connections"))?;
    let cell = cells
        .entry((workload, text("backend")?, connections))
        .or_default();
    if text("mode")? == "max" {
        if let Some(ms) = row["server_cpu_ms_per_request"]
            .as_f64()
            .filter(|ms| *ms > 0.0)
        {
            cell.per_cpu_second.push(1000.0 / ms);
        }
        if let Some(percent) = row["ceiling_percent"].as_f64() {
            cell.ceiling_percent.push(percent);
        }
    } else if let Some(p99) = row["p99_ms"].as_f64() {
        cell.paced_p99_ms.push(p99);
    }
    Ok(())
}

/// The server's name in the table.
fn server_name(backend: &str) -> String {
    match backend {
        "sqlite" => "fieldauth, SQLite".to_owned(),
        "postgres" => "fieldauth, PostgreSQL".to_owned(),
        other => other.to_owned(),
    }
}

/// Node first, then fieldauth on SQLite, then on PostgreSQL.
fn server_rank(backend: &str) -> u8 {
    match backend {
        "sqlite" => 1,
        "postgres" => 2,
        _ => 0,
    }
}

/// `1,356` or `1,478–1,530`.
fn range(values: &[f64], format: fn(f64) -> String) -> String {
    let low = values.iter().copied().fold(f64::INFINITY, f64::min);
    let high = values.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    match values.len() {
        0 => "–".to_owned(),
        _ if format(low) == format(high) => format(low),
        _ => format!("{}–{}", format(low), format(high)),
    }
}

fn thousands(value: f64) -> String {
    let digits = format!("{:.0}", value.round());
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

fn table(cells: &BTreeMap<Key, Cell>) -> String {
    let mut connections: Vec<u64> = cells.keys().map(|k| k.2).collect();
    connections.sort_unstable();
    connections.dedup();
    let mut servers: Vec<(String, String)> = cells
        .keys()
        .map(|(workload, backend, _)| (workload.clone(), backend.clone()))
        .collect();
    // Refresh before exchange, as in the issue.
    servers.sort_by_key(|(workload, backend)| (workload != "refresh", server_rank(backend)));
    servers.dedup();
    let mut header = vec!["workload".to_owned(), "server".to_owned()];
    header.extend(connections.iter().map(|c| format!("{c} connections")));
    header.extend(connections.iter().map(|c| format!("p99 at 80%, {c}")));
    let mut out = vec![
        format!("| {} |", header.join(" | ")),
        format!("|---|---|{}", "---:|".repeat(connections.len() * 2)),
    ];
    for (workload, backend) in servers {
        let mut line = vec![workload.clone(), server_name(&backend)];
        let cell = |c: &u64| cells.get(&(workload.clone(), backend.clone(), *c));
        for c in &connections {
            line.push(match cell(c) {
                Some(cell) if !cell.per_cpu_second.is_empty() => format!(
                    "{} ({}%)",
                    range(&cell.per_cpu_second, thousands),
                    range(&cell.ceiling_percent, |p| format!("{p:.0}"))
                ),
                _ => "–".to_owned(),
            });
        }
        for c in &connections {
            line.push(match cell(c) {
                Some(cell) if !cell.paced_p99_ms.is_empty() => {
                    format!("{} ms", range(&cell.paced_p99_ms, |p| format!("{p:.1}")))
                }
                _ => "–".to_owned(),
            });
        }
        out.push(format!("| {} |", line.join(" | ")));
    }
    out.join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn row(
        workload: &str,
        backend: &str,
        connections: u64,
        mode: &str,
        cpu: f64,
        p99: f64,
    ) -> Value {
        json!({
            "workload": workload, "backend": backend, "connections": connections, "mode": mode,
            "server_cpu_ms_per_request": cpu, "p99_ms": p99,
            "ceiling_percent": if workload == "userinfo" { Value::Null } else { json!(250.0 / cpu / 5.0) },
        })
    }

    #[test]
    fn the_table_has_a_row_per_workload_and_server_and_a_range_per_cell() {
        let reports = [
            vec![
                row("refresh", "node-oidc-provider", 8, "max", 0.8, 30.0),
                row("refresh", "node-oidc-provider", 8, "paced 80%", 0.9, 3.04),
                row("refresh", "sqlite", 8, "max", 0.5, 20.0),
                row("refresh", "sqlite", 8, "paced 80%", 0.5, 2.0),
                row("userinfo", "sqlite", 8, "max", 0.1, 1.0),
            ],
            vec![
                row("refresh", "sqlite", 8, "max", 0.4, 20.0),
                row("refresh", "sqlite", 32, "max", 0.5, 20.0),
                row("exchange", "postgres", 32, "max", 0.625, 20.0),
            ],
        ];
        let mut cells = BTreeMap::new();
        for report in &reports {
            for r in report {
                add(&mut cells, r).unwrap();
            }
        }
        let table = table(&cells);
        let lines: Vec<&str> = table.lines().collect();
        assert_eq!(
            lines[0],
            "| workload | server | 8 connections | 32 connections | p99 at 80%, 8 | p99 at 80%, 32 |"
        );
        assert_eq!(
            lines[2],
            "| refresh | node-oidc-provider | 1,250 (62%) | – | 3.0 ms | – |"
        );
        assert_eq!(
            lines[3],
            "| refresh | fieldauth, SQLite | 2,000–2,500 (100–125%) | 2,000 (100%) | 2.0 ms | – |"
        );
        assert_eq!(
            lines[4],
            "| exchange | fieldauth, PostgreSQL | – | 1,600 (80%) | – | – |"
        );
        assert_eq!(lines.len(), 5, "{table}");
    }

    #[test]
    fn thousands_are_separated() {
        assert_eq!(thousands(1355.6), "1,356");
        assert_eq!(thousands(999.0), "999");
        assert_eq!(thousands(1234567.0), "1,234,567");
    }
}

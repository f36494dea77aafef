//! `--callgrind DIR`: the server runs under valgrind's callgrind, which counts the
//! instructions it executes. A count is the same for the same binary and inputs whatever
//! else the host is doing, so a change worth a percent of a request shows where CPU time on a
//! shared host cannot tell it from the noise. Counts are user space only: the kernel's work
//! (system calls, switches) is not in them.
//!
//! The server starts with instrumentation off (valgrind alone runs it some five times
//! slower, callgrind some fifty), so start-up and minting are not slowed further; each
//! workload turns it on for its warm-up, zeroes the counts as its window opens and dumps them
//! as it closes. Each dump stays in DIR for `callgrind_annotate`.

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{bail, Context, Result};
use tokio::process::Command;

/// The valgrind command line that the server's binary and arguments follow.
pub fn wrapper(dir: &Path) -> Vec<String> {
    vec![
        "valgrind".to_owned(),
        "--tool=callgrind".to_owned(),
        "--instr-atstart=no".to_owned(),
        format!("--callgrind-out-file={}/callgrind.out.%p", dir.display()),
    ]
}

/// A server running under callgrind, by process id, and where its dumps go.
#[derive(Debug, Clone)]
pub struct Counter {
    pid: u32,
    dir: PathBuf,
}

/// More token responses a second than a server under callgrind gives (a signature that
/// takes a millisecond takes some fifty there), to size the exchange's pool of codes.
pub const RESPONSES_PER_SECOND: f64 = 200.0;

/// How long a request to callgrind may take: it reads them between the guest's blocks.
const CONTROL_TIMEOUT: Duration = Duration::from_secs(60);

impl Counter {
    pub fn new(pid: u32, dir: &Path) -> Counter {
        Counter {
            pid,
            dir: dir.to_owned(),
        }
    }

    /// Counts from now on (the warm-up's start), so the window measures code valgrind has
    /// already translated with its counters.
    pub async fn instrument(&self) -> Result<()> {
        self.control(&["--instr=on"]).await
    }

    /// Forgets what was counted so far: the window opens.
    pub async fn zero(&self) -> Result<()> {
        self.control(&["--zero"]).await
    }

    /// Writes what was counted since [`Counter::zero`] to a new dump named after `label`,
    /// stops counting, and returns what the dump counted.
    pub async fn dump(&self, label: &str) -> Result<Counted> {
        let before = self.dumps()?;
        self.control(&[&format!("--dump={label}")]).await?;
        self.control(&["--instr=off"]).await?;
        let after = self.dumps()?;
        let Some(file) = after.into_iter().find(|file| !before.contains(file)) else {
            bail!("callgrind wrote no dump in {}", self.dir.display());
        };
        let text = std::fs::read_to_string(&file)
            .with_context(|| format!("cannot read {}", file.display()))?;
        let total = totals(&text)?;
        let signing = signing(&file).await;
        Ok(Counted {
            dump: file,
            total,
            signing,
        })
    }

    /// The dumps of this process so far (`callgrind.out.PID.N`).
    fn dumps(&self) -> Result<Vec<PathBuf>> {
        let prefix = format!("callgrind.out.{}.", self.pid);
        let mut files = Vec::new();
        for entry in std::fs::read_dir(&self.dir)? {
            let path = entry?.path();
            let named = path
                .file_name()
                .and_then(|name| name.to_str())
                .is_some_and(|name| name.starts_with(&prefix));
            if named {
                files.push(path);
            }
        }
        Ok(files)
    }

    async fn control(&self, args: &[&str]) -> Result<()> {
        let run = Command::new("callgrind_control")
            .args(args)
            .arg(self.pid.to_string())
            .kill_on_drop(true)
            .output();
        let output = tokio::time::timeout(CONTROL_TIMEOUT, run)
            .await
            .with_context(|| format!("callgrind_control {} timed out", args.join(" ")))?
            .context("cannot run callgrind_control (valgrind's)")?;
        let said = String::from_utf8_lossy(&output.stdout);
        // It exits 0 even when the process is gone; its answer says "OK." per process.
        if !output.status.success() || !said.contains("OK.") {
            bail!(
                "callgrind_control {} {} failed: {}{}",
                args.join(" "),
                self.pid,
                said.trim(),
                String::from_utf8_lossy(&output.stderr).trim()
            );
        }
        Ok(())
    }
}

/// What one window's dump counted.
#[derive(Debug, Clone, PartialEq)]
pub struct Counted {
    pub dump: PathBuf,
    /// Every instruction of the server's in the window.
    pub total: u64,
    /// Those of its RS256 signatures (aws-lc-rs's `KeyPair::sign` and all it calls), when
    /// `callgrind_annotate` finds them.
    pub signing: Option<u64>,
}

/// The function whose inclusive count is the signatures'.
const SIGN: &str = "aws_lc_rs::rsa::key::KeyPair::sign";

/// The signatures' instructions in `dump`, by valgrind's `callgrind_annotate`; `None` when
/// it cannot be run or lists no signing (a server that signed nothing in the window).
async fn signing(dump: &Path) -> Option<u64> {
    let run = Command::new("callgrind_annotate")
        .args(["--inclusive=yes", "--threshold=100"])
        .arg(dump)
        .kill_on_drop(true)
        .output();
    let output = tokio::time::timeout(CONTROL_TIMEOUT, run)
        .await
        .ok()?
        .ok()?;
    if !output.status.success() {
        return None;
    }
    inclusive_of(&String::from_utf8_lossy(&output.stdout), SIGN)
}

/// The inclusive count of `function` in `callgrind_annotate --inclusive=yes` output, whose
/// lines read `10,443,489,867 (96.57%)  ???:FUNCTION [OBJECT]`.
fn inclusive_of(annotated: &str, function: &str) -> Option<u64> {
    annotated.lines().find_map(|line| {
        let (count, rest) = line.trim_start().split_once(' ')?;
        let name = rest.split_once(':')?.1.split(" [").next()?;
        (name == function)
            .then(|| count.replace(',', "").parse().ok())
            .flatten()
    })
}

/// The instructions a dump counted: its `totals:` line (or `summary:`, which older
/// versions write instead), whose first event is `Ir` as the wrapper counts no other.
fn totals(dump: &str) -> Result<u64> {
    let line = dump
        .lines()
        .find(|line| line.starts_with("totals:"))
        .or_else(|| dump.lines().find(|line| line.starts_with("summary:")));
    let Some(line) = line else {
        bail!("the dump has no totals line");
    };
    let count = line
        .split_whitespace()
        .nth(1)
        .context("the dump's totals line is empty")?;
    count
        .parse()
        .with_context(|| format!("the dump's totals are not a count: {count:?}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_dumps_totals() {
        let dump = "version: 1\ncmd: x\nevents: Ir\nsummary: 3829451\ntotals: 3829452\n";
        assert_eq!(totals(dump).unwrap(), 3_829_452);
        assert_eq!(totals("events: Ir\nsummary: 17\n").unwrap(), 17);
        assert!(totals("events: Ir\n").is_err());
        assert!(totals("totals: many\n").is_err());
    }

    #[test]
    fn finds_a_functions_inclusive_count_by_its_whole_name() {
        let annotated = "\
10,814,857,246 (100.0%)  PROGRAM TOTALS
10,496,963,254 (97.06%)  ???:core::ops::function::FnOnce::call_once{{vtable.shim}} [/tmp/fa]
10,443,489,867 (96.57%)  ???:aws_lc_rs::rsa::key::KeyPair::sign [/tmp/fa]
   206,257,816 ( 1.91%)  ???:aws_lc_rs::rsa::key::KeyPair::sign_with_more [/tmp/fa]
";
        assert_eq!(inclusive_of(annotated, SIGN), Some(10_443_489_867));
        let without =
            "   206,257,816 ( 1.91%)  ???:aws_lc_rs::rsa::key::KeyPair::sign_more [/tmp/fa]\n";
        assert_eq!(inclusive_of(without, SIGN), None);
    }
}

//! The server under test: started from the `fieldauth` binary (or, through [`Launch`], a
//! server it is compared with) on free loopback ports, optionally pinned with `taskset`,
//! awaited on its readiness URLs, stopped with SIGTERM, and its CPU time read from `/proc`.

use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Context, Result};
use tokio::process::{Child, Command};

use crate::callgrind;

/// How to start the server.
#[derive(Debug, Clone)]
pub struct ServerSettings {
    pub bin: PathBuf,
    pub database_url: String,
    /// A `taskset -c` CPU list.
    pub cpus: Option<String>,
    /// The server's `--log` filter.
    pub log_filter: String,
    /// Where its stdout and stderr go.
    pub log_path: PathBuf,
    /// Run it under callgrind, its dumps in this directory (`--callgrind`).
    pub callgrind: Option<PathBuf>,
}

/// What [`Server::launch`] starts: fieldauth, or another server compared with it.
pub struct Launch {
    /// The command, arguments included; its output goes to `log_path`.
    pub command: Command,
    /// The executable the process must turn out to be, `taskset` having exec'd into it.
    pub bin: PathBuf,
    /// The process is valgrind running `bin`, whose instructions it counts.
    pub callgrind: Option<PathBuf>,
    /// URLs that all answer 200 once the server is ready.
    pub ready: Vec<String>,
    pub issuer: String,
    /// The API the access tokens are for (fieldauth's API listener).
    pub api_url: String,
    pub log_path: PathBuf,
}

/// `bin` under `taskset -c CPUS` when given, else `bin` itself.
pub fn pinned(cpus: Option<&str>, bin: &Path) -> Command {
    match cpus {
        Some(cpus) => {
            let mut command = Command::new("taskset");
            command.arg("-c").arg(cpus).arg(bin);
            command
        }
        None => Command::new(bin),
    }
}

/// A running server. Dropping it without [`Server::stop`] still sends SIGTERM and waits a
/// little, then SIGKILL, so no server outlives the bench.
pub struct Server {
    child: Option<Child>,
    pid: u32,
    counter: Option<callgrind::Counter>,
    pub issuer: String,
    pub api_url: String,
    log_path: PathBuf,
}

const READY_TIMEOUT: Duration = Duration::from_secs(120);
const STOP_TIMEOUT: Duration = Duration::from_secs(15);

impl Server {
    pub async fn start(settings: &ServerSettings) -> Result<Server> {
        let (auth_port, api_port) = free_ports()?;
        let issuer = format!("http://127.0.0.1:{auth_port}");
        let api_url = format!("http://127.0.0.1:{api_port}");
        let mut command = match &settings.callgrind {
            Some(dir) => {
                let wrapper = callgrind::wrapper(dir);
                let mut command = pinned(settings.cpus.as_deref(), Path::new(&wrapper[0]));
                command.args(&wrapper[1..]).arg(&settings.bin);
                command
            }
            None => pinned(settings.cpus.as_deref(), &settings.bin),
        };
        command
            .arg("--database-url")
            .arg(&settings.database_url)
            .arg("--log")
            .arg(&settings.log_filter)
            .arg("serve")
            .args(["--auth-listen", &format!("127.0.0.1:{auth_port}")])
            .args(["--api-listen", &format!("127.0.0.1:{api_port}")])
            // The bench measures the protocol; no admin API, so no port to collide on.
            .args(["--admin-listen", ""])
            .args(["--auth-url", &issuer, "--api-url", &api_url]);
        let ready = vec![format!("{issuer}/readyz"), format!("{api_url}/readyz")];
        let launch = Launch {
            command,
            bin: settings.bin.clone(),
            callgrind: settings.callgrind.clone(),
            ready,
            issuer,
            api_url,
            log_path: settings.log_path.clone(),
        };
        Server::launch(launch).await
    }

    /// Starts any server under test: runs the command with its output to the log, waits
    /// until every readiness URL answers 200, and checks that the process is `bin` itself.
    pub async fn launch(launch: Launch) -> Result<Server> {
        let Launch {
            mut command,
            bin,
            callgrind,
            ready,
            issuer,
            api_url,
            log_path,
        } = launch;
        let log = std::fs::File::create(&log_path)
            .with_context(|| format!("cannot create {}", log_path.display()))?;
        command
            .stdin(Stdio::null())
            .stdout(log.try_clone()?)
            .stderr(log)
            .kill_on_drop(true);
        let child = command
            .spawn()
            .with_context(|| format!("cannot start {}", bin.display()))?;
        let pid = child
            .id()
            .ok_or_else(|| anyhow!("the server exited at once"))?;
        let mut server = Server {
            child: Some(child),
            pid,
            counter: callgrind
                .as_deref()
                .map(|dir| callgrind::Counter::new(pid, dir)),
            issuer,
            api_url,
            log_path,
        };
        server.wait_ready(&ready).await?;
        server.check_is(&bin)?;
        Ok(server)
    }

    /// Polls each of `urls` until they all answer 200.
    async fn wait_ready(&mut self, urls: &[String]) -> Result<()> {
        let client = reqwest::Client::builder()
            .timeout(Duration::from_secs(2))
            .build()?;
        let deadline = Instant::now() + READY_TIMEOUT;
        loop {
            if let Some(child) = self.child.as_mut() {
                if let Some(status) = child.try_wait()? {
                    bail!(
                        "the server exited ({status}) before it was ready; its log ends:\n{}",
                        self.log_tail()
                    );
                }
            }
            let mut ready = true;
            for url in urls {
                let ok = client
                    .get(url)
                    .send()
                    .await
                    .is_ok_and(|r| r.status() == 200);
                ready &= ok;
            }
            if ready {
                return Ok(());
            }
            if Instant::now() > deadline {
                bail!(
                    "the server was not ready within {READY_TIMEOUT:?}; its log ends:\n{}",
                    self.log_tail()
                );
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// The child must be the server itself, not `taskset` (which execs into it), or its CPU
    /// time would be the wrong process's; under callgrind, valgrind running the server.
    fn check_is(&self, bin: &Path) -> Result<()> {
        let exe = std::fs::read_link(format!("/proc/{}/exe", self.pid))
            .with_context(|| format!("cannot read /proc/{}/exe", self.pid))?;
        let expected = std::fs::canonicalize(bin)?;
        if self.counter.is_some() {
            return self.check_runs_under_valgrind(&exe, &expected);
        }
        if exe != expected {
            bail!(
                "process {} is {}, not the server {}",
                self.pid,
                exe.display(),
                expected.display()
            );
        }
        Ok(())
    }

    /// Valgrind's tool (`callgrind-ARCH-linux`) with the server among its arguments.
    fn check_runs_under_valgrind(&self, exe: &Path, server: &Path) -> Result<()> {
        let tool = exe
            .file_name()
            .and_then(|name| name.to_str())
            .is_some_and(|name| name.starts_with("callgrind-"));
        let cmdline = std::fs::read(format!("/proc/{}/cmdline", self.pid))?;
        // The server's path as given (relative, or through a link), so compared resolved.
        let runs_server = cmdline.split(|byte| *byte == 0).any(|arg| {
            std::fs::canonicalize(std::ffi::OsStr::from_bytes(arg)).is_ok_and(|arg| arg == server)
        });
        if !(tool && runs_server) {
            bail!(
                "process {} is {}, not callgrind running the server {}",
                self.pid,
                exe.display(),
                server.display()
            );
        }
        Ok(())
    }

    /// Callgrind's counts of the server, under `--callgrind`.
    pub fn counter(&self) -> Option<&callgrind::Counter> {
        self.counter.as_ref()
    }

    /// The server's process id, for what `/proc` says of it.
    pub fn pid(&self) -> u32 {
        self.pid
    }

    /// The server's CPU time so far (user + system, every thread).
    pub fn cpu_time(&self) -> Result<Duration> {
        cpu_time_of(&format!("/proc/{}/stat", self.pid))
    }

    /// The CPU time so far of the server's RS256 signing threads (`fieldauth-sign-N`, the
    /// oauth crate's `signer.rs`), or `None` for a server without them (node-oidc-provider).
    /// Read in the same window as [`Server::cpu_time`], its share of the server's CPU is the
    /// part of a token response spent signing, whatever speed the host's core ran at.
    pub fn signing_cpu_time(&self) -> Result<Option<Duration>> {
        threads_cpu_time(
            Path::new(&format!("/proc/{}/task", self.pid)),
            SIGNING_THREADS,
        )
    }

    /// The last lines of the server's log, to explain a failure.
    pub fn log_tail(&self) -> String {
        let text = std::fs::read_to_string(&self.log_path).unwrap_or_default();
        let lines: Vec<&str> = text.lines().collect();
        lines[lines.len().saturating_sub(20)..].join("\n")
    }

    /// SIGTERM, then waits for the graceful shutdown; SIGKILL if it takes too long.
    pub async fn stop(mut self) -> Result<()> {
        let Some(mut child) = self.child.take() else {
            return Ok(());
        };
        if child.try_wait()?.is_some() {
            bail!(
                "the server had already exited; its log ends:\n{}",
                self.log_tail()
            );
        }
        terminate(self.pid)?;
        match tokio::time::timeout(STOP_TIMEOUT, child.wait()).await {
            Ok(status) => {
                let status = status?;
                if !status.success() {
                    bail!(
                        "the server stopped with {status}; its log ends:\n{}",
                        self.log_tail()
                    );
                }
                Ok(())
            }
            Err(_) => {
                child.kill().await?;
                bail!("the server did not stop within {STOP_TIMEOUT:?} of SIGTERM; killed")
            }
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let Some(child) = self.child.as_mut() else {
            return;
        };
        // Only signal a child not yet reaped, so the pid cannot have been reused.
        if !matches!(child.try_wait(), Ok(None)) {
            return;
        }
        let _ = terminate(self.pid);
        let deadline = Instant::now() + Duration::from_secs(5);
        while Instant::now() < deadline && matches!(child.try_wait(), Ok(None)) {
            std::thread::sleep(Duration::from_millis(50));
        }
        // Whatever is left is killed by `kill_on_drop` when `child` drops.
    }
}

fn terminate(pid: u32) -> Result<()> {
    let pid = libc::pid_t::try_from(pid)?;
    // SAFETY: kill(2) takes plain integers and touches no memory of ours.
    let result = unsafe { libc::kill(pid, libc::SIGTERM) };
    if result != 0 {
        bail!(
            "cannot send SIGTERM to {pid}: {}",
            std::io::Error::last_os_error()
        );
    }
    Ok(())
}

/// Two distinct free loopback ports: bound together, so they differ, then released for the
/// server to bind.
pub fn free_ports() -> Result<(u16, u16)> {
    let auth = std::net::TcpListener::bind("127.0.0.1:0")?;
    let api = std::net::TcpListener::bind("127.0.0.1:0")?;
    Ok((auth.local_addr()?.port(), api.local_addr()?.port()))
}

/// This process's CPU time, to tell whether the generator itself was the bottleneck.
pub fn own_cpu_time() -> Result<Duration> {
    cpu_time_of("/proc/self/stat")
}

/// CPU time the hypervisor gave to other guests while this machine's CPUs wanted it (the
/// `steal` column of `/proc/stat`, all CPUs): a run with steal measured a shared host, not
/// only the server.
pub fn stolen_time() -> Result<Duration> {
    let stat = std::fs::read_to_string("/proc/stat").context("cannot read /proc/stat")?;
    let ticks = parse_steal_ticks(&stat).ok_or_else(|| anyhow!("cannot parse /proc/stat"))?;
    let per_second = clock_ticks_per_second()?;
    Ok(Duration::from_secs_f64(ticks as f64 / per_second as f64))
}

/// The 8th value of the `cpu` line of proc(5) `stat` (user nice system idle iowait irq
/// softirq steal); 0 on kernels that do not count it.
fn parse_steal_ticks(stat: &str) -> Option<u64> {
    let line = stat.lines().find(|line| line.starts_with("cpu "))?;
    let mut values = line.split_whitespace().skip(1);
    values.nth(7).map_or(Some(0), |steal| steal.parse().ok())
}

/// The start of the signing threads' names as `/proc` shows them (cut at 15 bytes).
const SIGNING_THREADS: &str = "fieldauth-sign";

/// The CPU time of the threads under `task_dir` (`/proc/<pid>/task`) whose name starts with
/// `prefix`, or `None` if none does. A thread that ends while the directory is read is left
/// out; the signing threads live as long as the server.
fn threads_cpu_time(task_dir: &Path, prefix: &str) -> Result<Option<Duration>> {
    let tasks = std::fs::read_dir(task_dir)
        .with_context(|| format!("cannot list {}", task_dir.display()))?;
    let mut ticks = None;
    for task in tasks {
        let task = task?.path();
        let Ok(name) = std::fs::read_to_string(task.join("comm")) else {
            continue;
        };
        if !name.trim_end().starts_with(prefix) {
            continue;
        }
        let Ok(stat) = std::fs::read_to_string(task.join("stat")) else {
            continue;
        };
        let own = parse_cpu_ticks(&stat)
            .ok_or_else(|| anyhow!("cannot parse {}", task.join("stat").display()))?;
        ticks = Some(ticks.unwrap_or(0) + own);
    }
    ticks.map(ticks_to_duration).transpose()
}

fn ticks_to_duration(ticks: u64) -> Result<Duration> {
    let per_second = clock_ticks_per_second()?;
    Ok(Duration::from_secs_f64(ticks as f64 / per_second as f64))
}

fn cpu_time_of(stat_path: &str) -> Result<Duration> {
    let stat =
        std::fs::read_to_string(stat_path).with_context(|| format!("cannot read {stat_path}"))?;
    let ticks = parse_cpu_ticks(&stat).ok_or_else(|| anyhow!("cannot parse {stat_path}"))?;
    ticks_to_duration(ticks)
}

/// utime + stime, fields 14 and 15 of proc(5) `stat`, in clock ticks. The command name
/// (field 2) is in parentheses and may hold spaces, so fields are counted after the last `)`.
fn parse_cpu_ticks(stat: &str) -> Option<u64> {
    let (_, rest) = stat.rsplit_once(')')?;
    let mut fields = rest.split_whitespace().skip(11); // field 3 is the first after `)`
    let utime: u64 = fields.next()?.parse().ok()?;
    let stime: u64 = fields.next()?.parse().ok()?;
    Some(utime + stime)
}

fn clock_ticks_per_second() -> Result<u64> {
    // SAFETY: sysconf(3) reads a constant of the system and takes no pointers.
    let ticks = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    u64::try_from(ticks)
        .ok()
        .filter(|t| *t > 0)
        .ok_or_else(|| anyhow!("sysconf(_SC_CLK_TCK) failed"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn utime_and_stime_are_fields_14_and_15_even_with_spaces_in_the_name() {
        let stat = "4242 (tokio (rt) 1) S 1 4242 4242 0 -1 4194560 1200 0 0 0 \
                    731 269 0 0 20 0 9 0 123456 1000000 2000 18446744073709551615";
        assert_eq!(parse_cpu_ticks(stat), Some(731 + 269));
    }

    #[test]
    fn steal_is_the_eighth_value_of_the_cpu_line() {
        let stat = "cpu  358789 0 73112 342063 5181 0 7480 2307 0 0\n\
                    cpu0 202830 0 50378 136177 1436 0 4726 593 0 0\n";
        assert_eq!(parse_steal_ticks(stat), Some(2307));
        assert_eq!(parse_steal_ticks("cpu  1 2 3 4 5 6 7\n"), Some(0));
        assert_eq!(parse_steal_ticks("cpu0 1 2 3 4 5 6 7 8\n"), None);
        stolen_time().unwrap();
    }

    #[test]
    fn only_the_named_threads_cpu_time_is_summed() {
        let (done, wait) = std::sync::mpsc::channel::<()>();
        let (busy, spent) = std::sync::mpsc::channel();
        let signer = std::thread::Builder::new()
            .name("fieldauth-sign-9".to_owned())
            .spawn(move || {
                // 300 ms of its own CPU, however busy the machine running the tests is.
                let spin = || crate::ceiling::thread_cpu_time().unwrap();
                let start = spin();
                let mut x = 0u64;
                while spin() - start < Duration::from_millis(300) {
                    x = std::hint::black_box(x.wrapping_mul(31).wrapping_add(7));
                }
                busy.send(()).unwrap();
                // Alive while the test reads its time, as the server's threads are.
                let _ = wait.recv();
            })
            .unwrap();
        spent.recv().unwrap();
        let task_dir = Path::new("/proc/self/task");
        let signing = threads_cpu_time(task_dir, SIGNING_THREADS)
            .unwrap()
            .expect("the thread is found by its name");
        // Its own 300 ms (within the clock ticks' rounding), not the whole process's.
        assert!(signing >= Duration::from_millis(200), "{signing:?}");
        assert!(signing < Duration::from_millis(600), "{signing:?}");
        assert_eq!(threads_cpu_time(task_dir, "no-such-thread").unwrap(), None);
        done.send(()).unwrap();
        signer.join().unwrap();
    }

    #[test]
    fn this_process_stat_parses() {
        own_cpu_time().unwrap();
    }
}

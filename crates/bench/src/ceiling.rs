//! The RSA-signing ceiling: how many RS256 signatures one core of this machine makes per
//! second, measured in the same run as the workloads, on the server's own core, with the same
//! library and key size as the server. A token response with an ID token signs two JWTs, so no
//! server can answer more than half that many code exchanges or refreshes per core.

use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Context, Result};
use aws_lc_rs::rsa::{KeyPair, KeySize};
use aws_lc_rs::signature::RSA_PKCS1_SHA256;

/// An access token and an ID token per code exchange or refresh with `openid`.
pub const SIGNATURES_PER_TOKEN_RESPONSE: f64 = 2.0;

/// About the size of a signing input the server signs (a JWT's header and claims, base64url).
const MESSAGE_LEN: usize = 600;

/// The key the ceiling signs with: generated once per run, as RSA key generation takes long.
#[derive(Clone)]
pub struct Signer {
    key: Arc<KeyPair>,
}

impl Signer {
    pub async fn generate() -> Result<Signer> {
        let key = tokio::task::spawn_blocking(|| KeyPair::generate(KeySize::Rsa2048))
            .await
            .context("the RSA key generation task failed")?
            .map_err(|_| anyhow!("cannot generate an RSA-2048 key"))?;
        Ok(Signer { key: Arc::new(key) })
    }

    /// Signs for `length` on a thread of its own, pinned to `cpu` when given. A thread of
    /// its own, not one of tokio's, because pinning would outlive the measurement on a
    /// pooled thread.
    pub async fn measure(&self, length: Duration, cpu: Option<usize>) -> Result<Ceiling> {
        let key = self.key.clone();
        let (sender, receiver) = tokio::sync::oneshot::channel();
        std::thread::Builder::new()
            .name("rsa-ceiling".to_owned())
            .spawn(move || {
                // The receiver is only gone when the run was interrupted.
                let _ = sender.send(sign_for(&key, length, cpu));
            })
            .context("cannot start the signing thread")?;
        receiver
            .await
            .context("the signing thread ended without a result")?
    }
}

/// What one measurement of the ceiling saw.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Ceiling {
    pub signatures: u64,
    /// The signing thread's own CPU time.
    pub cpu: Duration,
    pub wall: Duration,
    /// The CPU it was pinned to, if any.
    pub pinned_cpu: Option<usize>,
}

impl Ceiling {
    /// The per-core ceiling: signatures per second of one core's CPU time.
    pub fn per_cpu_second(&self) -> f64 {
        per_second(self.signatures, self.cpu)
    }

    /// Lower than [`Ceiling::per_cpu_second`] when something else ran on the core.
    pub fn per_wall_second(&self) -> f64 {
        per_second(self.signatures, self.wall)
    }

    /// Token responses (two signatures each) per second of one core: the most a server
    /// could answer if it did nothing but sign.
    pub fn token_responses_per_core(&self) -> f64 {
        self.per_cpu_second() / SIGNATURES_PER_TOKEN_RESPONSE
    }
}

fn per_second(count: u64, time: Duration) -> f64 {
    match time.as_secs_f64() {
        seconds if seconds > 0.0 => count as f64 / seconds,
        _ => 0.0,
    }
}

/// The server's requests per core-second as a percentage of the ceiling's token responses
/// per core-second: `(1 / CPU seconds per request) / (signatures per CPU-second / 2) × 100`.
/// `None` when either side is unknown.
pub fn percent_of_ceiling(
    server_cpu_ms_per_request: f64,
    signs_per_cpu_second: f64,
) -> Option<f64> {
    if server_cpu_ms_per_request <= 0.0 || signs_per_cpu_second <= 0.0 {
        return None;
    }
    let requests_per_core_second = 1000.0 / server_cpu_ms_per_request;
    let ceiling = signs_per_cpu_second / SIGNATURES_PER_TOKEN_RESPONSE;
    Some(requests_per_core_second / ceiling * 100.0)
}

fn sign_for(key: &KeyPair, length: Duration, cpu: Option<usize>) -> Result<Ceiling> {
    if let Some(cpu) = cpu {
        pin_current_thread(cpu)?;
    }
    let message: Vec<u8> = (b'A'..=b'Z').cycle().take(MESSAGE_LEN).collect();
    let rng = aws_lc_rs::rand::SystemRandom::new();
    let mut signature = vec![0; key.public_modulus_len()];
    let cpu_from = thread_cpu_time()?;
    let wall_from = Instant::now();
    let mut signatures = 0;
    loop {
        key.sign(&RSA_PKCS1_SHA256, &rng, &message, &mut signature)
            .map_err(|_| anyhow!("RSA signing failed"))?;
        signatures += 1;
        if wall_from.elapsed() >= length {
            break;
        }
    }
    let wall = wall_from.elapsed();
    let cpu_time = thread_cpu_time()?.saturating_sub(cpu_from);
    Ok(Ceiling {
        signatures,
        cpu: cpu_time,
        wall,
        pinned_cpu: cpu,
    })
}

/// The CPUs of a `taskset -c` list: `0`, `0-1`, `0,2`, `0-1,4`, in the order given.
pub fn parse_cpu_list(list: &str) -> Result<Vec<usize>> {
    let mut cpus = Vec::new();
    for part in list.split(',') {
        let part = part.trim();
        let parse = |number: &str| {
            number
                .trim()
                .parse::<usize>()
                .with_context(|| format!("CPU list {list:?}: {number:?} is not a CPU number"))
        };
        match part.split_once('-') {
            Some((first, last)) => {
                let (first, last) = (parse(first)?, parse(last)?);
                if first > last {
                    bail!("CPU list {list:?}: the range {part:?} runs backwards");
                }
                cpus.extend(first..=last);
            }
            None => cpus.push(parse(part)?),
        }
    }
    Ok(cpus)
}

fn pin_current_thread(cpu: usize) -> Result<()> {
    let set_size = std::mem::size_of::<libc::cpu_set_t>();
    if cpu >= set_size * 8 {
        bail!("CPU {cpu} is beyond what sched_setaffinity can name");
    }
    // SAFETY: cpu_set_t is a plain bit array, all zeros is the empty set; CPU_SET writes
    // inside it (checked above), and sched_setaffinity(0, …) reads it for this thread only.
    let result = unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut set);
        libc::sched_setaffinity(0, set_size, &set)
    };
    if result != 0 {
        bail!(
            "cannot pin the signing thread to CPU {cpu}: {}",
            std::io::Error::last_os_error()
        );
    }
    Ok(())
}

/// The calling thread's CPU time (user + system), with nanosecond resolution.
pub(crate) fn thread_cpu_time() -> Result<Duration> {
    let mut time = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes one timespec, which `time` is.
    let result = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut time) };
    if result != 0 {
        bail!(
            "clock_gettime(CLOCK_THREAD_CPUTIME_ID) failed: {}",
            std::io::Error::last_os_error()
        );
    }
    let seconds = u64::try_from(time.tv_sec)?;
    let nanos = u32::try_from(time.tv_nsec)?;
    Ok(Duration::new(seconds, nanos))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cpu_list_names_single_cpus_ranges_and_both() {
        assert_eq!(parse_cpu_list("0").unwrap(), [0]);
        assert_eq!(parse_cpu_list("0-1").unwrap(), [0, 1]);
        assert_eq!(parse_cpu_list("0,2").unwrap(), [0, 2]);
        assert_eq!(parse_cpu_list("3,0-1").unwrap(), [3, 0, 1]);
        assert_eq!(parse_cpu_list(" 2 - 4 ").unwrap(), [2, 3, 4]);
    }

    #[test]
    fn a_malformed_cpu_list_is_refused() {
        for list in ["", "a", "1-", "-1", "3-1", "0,,1", "0:2"] {
            assert!(parse_cpu_list(list).is_err(), "{list:?}");
        }
    }

    #[test]
    fn the_ratio_compares_requests_per_core_second_with_half_the_signatures() {
        // 1000 signatures per CPU-second: 500 token responses per core-second at most.
        // A request costing 4 ms of server CPU is 250 per core-second: half the ceiling.
        assert_eq!(percent_of_ceiling(4.0, 1000.0), Some(50.0));
        // Exactly two signatures' worth of CPU per request is the ceiling itself.
        assert_eq!(percent_of_ceiling(2.0, 1000.0), Some(100.0));
        // A request without signing can be above it.
        assert_eq!(percent_of_ceiling(0.5, 1000.0), Some(400.0));
        assert_eq!(percent_of_ceiling(0.0, 1000.0), None);
        assert_eq!(percent_of_ceiling(4.0, 0.0), None);
    }

    #[test]
    fn the_rates_divide_by_cpu_or_wall_time() {
        let ceiling = Ceiling {
            signatures: 3000,
            cpu: Duration::from_millis(1500),
            wall: Duration::from_secs(2),
            pinned_cpu: None,
        };
        assert_eq!(ceiling.per_cpu_second(), 2000.0);
        assert_eq!(ceiling.per_wall_second(), 1500.0);
        assert_eq!(ceiling.token_responses_per_core(), 1000.0);
        let idle = Ceiling {
            cpu: Duration::ZERO,
            ..ceiling
        };
        assert_eq!(idle.per_cpu_second(), 0.0);
    }

    #[tokio::test]
    async fn signing_is_counted_with_the_threads_own_cpu_time() {
        let signer = Signer::generate().await.unwrap();
        let length = Duration::from_millis(200);
        let ceiling = signer.measure(length, None).await.unwrap();
        assert!(ceiling.signatures > 0, "{ceiling:?}");
        assert!(ceiling.wall >= length, "{ceiling:?}");
        // A busy loop: CPU time is most of the wall time, never above it by much.
        assert!(ceiling.cpu > Duration::ZERO, "{ceiling:?}");
        assert!(
            ceiling.cpu <= ceiling.wall + Duration::from_millis(20),
            "{ceiling:?}"
        );
    }

    #[tokio::test]
    async fn a_pinned_thread_runs_on_its_cpu() {
        let cpu = allowed_cpus().into_iter().last().unwrap();
        let signer = Signer::generate().await.unwrap();
        let ceiling = signer
            .measure(Duration::from_millis(50), Some(cpu))
            .await
            .unwrap();
        assert!(ceiling.signatures > 0, "{ceiling:?}");
        let (sender, receiver) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            pin_current_thread(cpu).unwrap();
            // SAFETY: sched_getcpu takes nothing and returns a number.
            sender.send(unsafe { libc::sched_getcpu() }).unwrap();
        });
        assert_eq!(receiver.recv().unwrap(), i32::try_from(cpu).unwrap());
        assert!(pin_current_thread(usize::MAX / 16).is_err());
    }

    /// The CPUs this process may run on.
    fn allowed_cpus() -> Vec<usize> {
        let set_size = std::mem::size_of::<libc::cpu_set_t>();
        // SAFETY: sched_getaffinity writes one cpu_set_t; CPU_ISSET reads inside it.
        unsafe {
            let mut set: libc::cpu_set_t = std::mem::zeroed();
            assert_eq!(libc::sched_getaffinity(0, set_size, &mut set), 0);
            (0..set_size * 8)
                .filter(|cpu| libc::CPU_ISSET(*cpu, &set))
                .collect()
        }
    }
}

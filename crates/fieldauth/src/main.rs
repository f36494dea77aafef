//! `fieldauth`: parse the command line, install logging, run, and exit non-zero with a
//! one-line reason on failure.

use std::process::ExitCode;

use clap::Parser;

// Many small, short-lived allocations per request (GraphQL values, headers, rows): mimalloc
// serves them at a fraction of glibc's cost (docs/performance.md, Profiles).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    no_preemption_between_our_threads();
    purge_freed_memory_at_once();
    sqlite_allocates_with_mimalloc();
    // Also before SQLite's first use, on this one thread (`sqlite_page_cache.rs`).
    store::install_sqlite_page_cache();
    let cli = fieldauth::cli::Cli::parse();
    if let Err(error) = fieldauth::telemetry::init(cli.log_format, &cli.log) {
        eprintln!("error: {error:#}");
        return ExitCode::FAILURE;
    }
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("error: cannot start the async runtime: {error}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(fieldauth::run(cli)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("error: {error:#}");
            ExitCode::FAILURE
        }
    }
}

/// Puts the process under Linux's `SCHED_BATCH` before any other thread starts (threads
/// inherit it): a thread of ours that wakes up no longer preempts the one running, and waits
/// for the end of its time slice instead. Under load the async worker woke twice per token
/// response (the request's bytes, the signing thread's result) and took the core from the
/// signing thread each time; now the two alternate once per slice, about a millisecond
/// (context switches per refresh on SQLite 3.4 -> 0.4; docs/performance.md). sched(7) describes the
/// policy for exactly this: no extra preemptions between a workload's own tasks. Fairness
/// between processes is unchanged. Where the call is refused (a sandbox), the server runs
/// as before, only slower, so the error is ignored.
#[cfg(target_os = "linux")]
fn no_preemption_between_our_threads() {
    let param = libc::sched_param { sched_priority: 0 };
    // SAFETY: `param` is a valid sched_param for the call's duration; pid 0 is this thread.
    let _ = unsafe { libc::sched_setscheduler(0, libc::SCHED_BATCH, &param) };
}

#[cfg(not(target_os = "linux"))]
fn no_preemption_between_our_threads() {}

/// mimalloc's `purge_delay` option (`mi_option_purge_delay` in mimalloc.h, 15 in both its
/// v2 and v3 enums; the Rust bindings name fewer options than the C header).
const MI_OPTION_PURGE_DELAY: libmimalloc_sys::mi_option_t = 15;

/// mimalloc gives freed memory back to the OS 10 ms after it is freed, but only when the
/// allocator next runs on that thread: what the last requests before a quiet spell freed
/// (the 19 MiB of an Argon2id hash, a burst's buffers) stayed resident while the server was
/// idle, about 5 MiB of its 36 MiB. With no delay it goes back when freed. Under load the
/// threads keep the pages they reuse, and the refresh and API benchmarks showed no
/// difference in CPU per request (docs/performance.md, Memory). An operator who sets
/// mimalloc's own `MIMALLOC_PURGE_DELAY` (milliseconds) chooses for themselves.
fn purge_freed_memory_at_once() {
    if std::env::var_os("MIMALLOC_PURGE_DELAY").is_some() {
        return;
    }
    // SAFETY: mi_option_set takes no pointers; it only sets a number mimalloc reads when it
    // next purges.
    unsafe { libmimalloc_sys::mi_option_set(MI_OPTION_PURGE_DELAY, 0) };
}

/// SQLite, a C library, allocates with the C library's `malloc` unless told otherwise: its
/// statements' cursors and records and its page cache went through glibc, a fifth of the
/// SQLite thread's time in a refresh (docs/performance.md). It is told to use mimalloc, as
/// the rest of the process does. Must run before SQLite is first used; afterwards
/// `sqlite3_config` refuses (`SQLITE_MISUSE`), and SQLite keeps its own allocator.
fn sqlite_allocates_with_mimalloc() {
    use std::os::raw::{c_int, c_void};

    use libmimalloc_sys::{mi_free, mi_good_size, mi_malloc, mi_realloc, mi_usable_size};
    use libsqlite3_sys as sqlite;

    // SQLite asks for sizes in `int`; it never asks for a negative one.
    fn size(n: c_int) -> usize {
        usize::try_from(n).unwrap_or(0)
    }
    fn int(n: usize) -> c_int {
        c_int::try_from(n).unwrap_or(c_int::MAX)
    }
    // SAFETY (all six): SQLite calls them as its `sqlite3_mem_methods` contract says, with
    // pointers it got from these same functions; mimalloc's alignment (8 bytes at least)
    // is what SQLite requires.
    unsafe extern "C" fn malloc(n: c_int) -> *mut c_void {
        unsafe { mi_malloc(size(n)) }
    }
    unsafe extern "C" fn free(p: *mut c_void) {
        unsafe { mi_free(p) }
    }
    unsafe extern "C" fn realloc(p: *mut c_void, n: c_int) -> *mut c_void {
        unsafe { mi_realloc(p, size(n)) }
    }
    unsafe extern "C" fn usable_size(p: *mut c_void) -> c_int {
        int(unsafe { mi_usable_size(p) })
    }
    unsafe extern "C" fn roundup(n: c_int) -> c_int {
        int(unsafe { mi_good_size(size(n)) })
    }
    unsafe extern "C" fn init(_: *mut c_void) -> c_int {
        sqlite::SQLITE_OK
    }
    unsafe extern "C" fn shutdown(_: *mut c_void) {}

    let methods = sqlite::sqlite3_mem_methods {
        xMalloc: Some(malloc),
        xFree: Some(free),
        xRealloc: Some(realloc),
        xSize: Some(usable_size),
        xRoundup: Some(roundup),
        xInit: Some(init),
        xShutdown: Some(shutdown),
        pAppData: std::ptr::null_mut(),
    };
    // SAFETY: called before any connection is opened (the first thing `main` does after
    // mimalloc's option); SQLite copies `methods` before it returns. If it refuses, SQLite
    // keeps its default allocator, which is as correct, only slower.
    let methods: *const sqlite::sqlite3_mem_methods = &methods;
    unsafe { sqlite::sqlite3_config(sqlite::SQLITE_CONFIG_MALLOC, methods) };
    // SQLite counts every allocation for `sqlite3_memory_used` under a process-wide mutex
    // (a lock and an unlock per `malloc` and `free`: 2.6% of an uncached API query's CPU,
    // docs/performance.md). Nothing here reads those counts, and the soft heap limit, the
    // one feature that needs them, is not used.
    // SAFETY: as above, before SQLite is first used; the argument is the `int` it expects.
    unsafe { sqlite::sqlite3_config(sqlite::SQLITE_CONFIG_MEMSTATUS, 0 as c_int) };
}

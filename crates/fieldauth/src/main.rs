//! `fieldauth`: parse the command line, install logging, run, and exit non-zero with a
//! one-line reason on failure.

use std::process::ExitCode;

use clap::Parser;

// Many small, short-lived allocations per request (GraphQL values, headers, rows): mimalloc
// serves them at a fraction of glibc's cost (docs/performance.md, Profiles).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    purge_freed_memory_at_once();
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

/// mimalloc's `purge_delay` option (`mi_option_purge_delay` in mimalloc.h, 15 in both its
/// v2 and v3 enums; the Rust bindings name fewer options than the C header).
const MI_OPTION_PURGE_DELAY: libmimalloc_sys::mi_option_t = 15;

/// mimalloc gives freed memory back to the OS 10 ms after it is freed, but only when the
/// allocator next runs on that thread: what the last requests before a quiet spell freed
/// (the 19 MiB of an Argon2id hash, a burst's buffers) stayed resident while the server was
/// idle, about 5 MiB of its 36 MiB. With no delay it goes back when freed. Under load the
/// threads keep the pages they reuse, and the refresh and API benchmarks showed no
/// difference in CPU per request (docs/performance.md, Memory).
fn purge_freed_memory_at_once() {
    // SAFETY: mi_option_set takes no pointers; it only sets a number mimalloc reads when it
    // next purges.
    unsafe { libmimalloc_sys::mi_option_set(MI_OPTION_PURGE_DELAY, 0) };
}

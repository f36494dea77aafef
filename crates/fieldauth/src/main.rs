//! `fieldauth`: parse the command line, install logging, run, and exit non-zero with a
//! one-line reason on failure.

use std::process::ExitCode;

use clap::Parser;

// Many small, short-lived allocations per request (GraphQL values, headers, rows): mimalloc
// serves them at a fraction of glibc's cost (docs/performance.md, Profiles).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
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

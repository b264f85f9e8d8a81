//! The `toolgate` binary: parse the command line and hand off to `toolgate::cli`.

use clap::Parser;
use std::process::ExitCode;

/// mimalloc: glibc malloc's arena locks and consolidation were the largest user-space cost under load.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    toolgate::cli::main(toolgate::cli::Cli::parse())
}

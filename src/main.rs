//! The `toolgate` binary: parse the command line and hand off to `toolgate::cli`.

use clap::Parser;
use std::process::ExitCode;

fn main() -> ExitCode {
    toolgate::cli::main(toolgate::cli::Cli::parse())
}

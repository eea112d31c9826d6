//! `ge`: compile ONNX models to `.om` blobs and run them on the simulated NPU (like `atc`).
//! Every failure prints one line on stderr and exits non-zero.
#![forbid(unsafe_code)]

mod cli;
mod commands;
mod profile;

use clap::Parser;

fn main() {
    let cli = cli::Cli::parse();
    if let Err(e) = commands::dispatch(cli) {
        let line = e.replace('\n', " ");
        eprintln!("ge: error: {line}");
        std::process::exit(1);
    }
}

//! The `snarkd` daemon binary: parse the command line, load the config, run, and map the outcome
//! to an exit code (0 ok, 78 bad config, 1 anything else) in this one place.

use clap::Parser;

use snarkd::cli::{exit, SnarkdCli, SnarkdCommand};

fn main() {
    std::process::exit(run());
}

fn run() -> i32 {
    let cli = SnarkdCli::parse();
    let source = cli.config_source();
    let overrides = cli.overrides.to_overrides();
    let config = match snarkd::config::load(&source, &overrides) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("snarkd: invalid configuration: {e}");
            return exit::CONFIG;
        }
    };
    match cli.command.unwrap_or(SnarkdCommand::Run) {
        SnarkdCommand::CheckConfig => {
            println!("# effective configuration (defaults < {} < SNARKD_* env < flags)", source.path().display());
            print!("{}", config.to_toml());
            exit::OK
        }
        SnarkdCommand::Run => {
            let log = snarkd::systemd::journal::init(config.log.target, &config.log.level);
            let runtime = match tokio::runtime::Builder::new_multi_thread().enable_all().thread_name("rpc").build() {
                Ok(r) => r,
                Err(e) => {
                    eprintln!("snarkd: cannot start the async runtime: {e}");
                    return exit::FAILURE;
                }
            };
            let parts = snarkd::daemon::default_parts(&config);
            match runtime.block_on(snarkd::daemon::run(config, source, overrides, Some(log), parts)) {
                Ok(()) => exit::OK,
                Err(e) => {
                    tracing::error!("snarkd failed: {e}");
                    eprintln!("snarkd: {e}");
                    exit::FAILURE
                }
            }
        }
    }
}

//! Man pages generated from the clap definitions and the config schema (placeholder until the
//! packaging work lands).

use std::path::{Path, PathBuf};

/// Writes every man page into `dir` and returns their paths.
pub fn write_all(_dir: &Path) -> anyhow::Result<Vec<PathBuf>> {
    anyhow::bail!("man page generation is not implemented yet")
}

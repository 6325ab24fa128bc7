//! The Tauri shell (placeholder until the desktop helper fills it).
use std::path::PathBuf;

pub fn run(_data_dir: PathBuf) -> anyhow::Result<()> {
    anyhow::bail!("the desktop window is not built yet")
}

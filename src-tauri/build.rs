//! Build script: runs tauri-build, which embeds the config, validates the capabilities and generates the
//! ACL. The app command manifest makes app commands go through the ACL like plugin commands: a command is
//! callable only from a window whose capability grants its generated `allow-<command>` permission.

fn main() {
    tauri_build::try_build(
        tauri_build::Attributes::new()
            .app_manifest(tauri_build::AppManifest::new().commands(&["stats", "add_urls"])),
    )
    .expect("tauri-build failed: check tauri.conf.json and capabilities/*.json");
}

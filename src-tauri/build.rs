//! Build script: runs tauri-build, which embeds the config, validates the capabilities and generates the
//! ACL. The app command manifest makes app commands go through the ACL like plugin commands: a command is
//! callable only from a window whose capability grants its generated `allow-<command>` permission.

/// Every app command in `desktop::commands` and `desktop::library`; a command missing here cannot be granted or called.
const COMMANDS: &[&str] = &[
    "stats",
    "add_urls",
    "list_jobs",
    "filters",
    "job_details",
    "retry_jobs",
    "retry_dead",
    "cancel_jobs",
    "delete_jobs",
    "set_queue_paused",
    "set_host_paused",
    "get_settings",
    "save_settings",
    "open_document",
    "open_library",
    "open_in_browser",
    "export_library",
    "search_library",
    "library_tags",
    "library_hosts",
    "read_document_of",
    "read_document_rest",
    "set_document_tags",
    "open_pdf",
    "open_link",
];

fn main() {
    tauri_build::try_build(
        tauri_build::Attributes::new()
            .app_manifest(tauri_build::AppManifest::new().commands(COMMANDS)),
    )
    .expect("tauri-build failed: check tauri.conf.json and capabilities/*.json");
}

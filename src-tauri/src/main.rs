// Keep the Windows console out of release GUI launches; the CLI still prints when run from a shell.
#![cfg_attr(not(debug_assertions), windows_subsystem = "windows")]

fn main() -> std::process::ExitCode {
    gleaner::cli::main()
}

//! Gleaner: pull web pages into a local knowledge base through a durable, classified retry queue.
//!
//! `engine` has no Tauri imports; `desktop` is the thin Tauri shell over it; `cli` is the binary's edge.

pub mod cli;
pub mod desktop;
pub mod engine;

//! `gleaner tags`: every tag with its count, a job's tags, and changing them by hand.

use std::process::ExitCode;

use crate::engine::intake::printable;
use crate::engine::library::Library;
use crate::engine::queue::Queue;
use crate::engine::tags::{self, clean, key};

/// What `gleaner tags` was asked.
#[derive(Debug)]
pub struct TagsArgs {
    pub id: Option<i64>,
    pub add: Vec<String>,
    pub remove: Vec<String>,
    pub json: bool,
}

pub fn tags(store: &dyn Queue, library: &Library, args: TagsArgs) -> anyhow::Result<ExitCode> {
    let Some(id) = args.id else {
        return list(store, args.json);
    };
    if store.job(id)?.is_none() {
        anyhow::bail!("there is no job {id}");
    }
    let mut now = store.job_tags(id)?;
    if !args.add.is_empty() || !args.remove.is_empty() {
        let removed: Vec<String> = args
            .remove
            .iter()
            .filter_map(|t| clean(t))
            .map(|t| key(&t))
            .collect();
        now.retain(|t| !removed.contains(&key(t)));
        now.extend(args.add.iter().cloned());
        now = tags::set_tags(store, library, id, &now)?;
    }
    if args.json {
        println!("{}", serde_json::to_string(&now)?);
    } else if now.is_empty() {
        println!("job {id} has no tags");
    } else {
        let shown: Vec<_> = now.iter().map(|t| printable(t)).collect();
        println!("job {id}: {}", shown.join(", "));
    }
    Ok(ExitCode::SUCCESS)
}

/// Every tag with how many jobs carry it, most used first.
fn list(store: &dyn Queue, json: bool) -> anyhow::Result<ExitCode> {
    let counts = store.tag_counts()?;
    if json {
        let objects: Vec<_> = counts
            .iter()
            .map(|(tag, jobs)| serde_json::json!({ "tag": tag, "jobs": jobs }))
            .collect();
        println!("{}", serde_json::to_string_pretty(&objects)?);
        return Ok(ExitCode::SUCCESS);
    }
    if counts.is_empty() {
        println!("no job has tags");
    }
    for (tag, jobs) in &counts {
        println!("{jobs:>6}  {}", printable(tag));
    }
    Ok(ExitCode::SUCCESS)
}

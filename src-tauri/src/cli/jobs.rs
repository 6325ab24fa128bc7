//! `gleaner jobs`: listing, showing and acting on jobs.

use std::process::ExitCode;
use std::time::Duration;

use anyhow::bail;

use super::{JobsCommand, error_suffix, wait_until};
use crate::engine::intake::{printable, shown_url};
use crate::engine::policy::{self, Policy};
use crate::engine::queue::{ActionResult, Job, JobFilter, Queue, Stage, Status, rfc3339};

pub(super) fn jobs(
    store: &dyn Queue,
    policy: &Policy,
    command: JobsCommand,
    now: i64,
) -> anyhow::Result<ExitCode> {
    match command {
        JobsCommand::List {
            status,
            host,
            search,
            limit,
            json,
        } => {
            let list = store.list_jobs(&JobFilter {
                status,
                host,
                search,
                limit,
                ..JobFilter::default()
            })?;
            if json {
                println!("{}", serde_json::to_string_pretty(&list)?);
            } else {
                println!(
                    "{:>6}  {:<9}  {:>8}  {:>7}  {:<14}  URL",
                    "ID", "STATUS", "ATTEMPTS", "RETRIES", "NEXT"
                );
                for j in &list {
                    println!(
                        "{:>6}  {:<9}  {:>8}  {:>7}  {:<14}  {}{}",
                        j.id,
                        j.status.as_str(),
                        j.attempts,
                        format!("{}/{}", j.retries_used, j.max_retries),
                        next_column(j, now),
                        shown_url(&j.url),
                        error_suffix(j)
                    );
                }
            }
            Ok(ExitCode::SUCCESS)
        }
        JobsCommand::Show { id, json } => {
            let Some(job) = store.job(id)? else {
                bail!("no job {id}")
            };
            let history = store.attempts(id)?;
            if json {
                let mut v = serde_json::to_value(&job)?;
                v["history"] = serde_json::to_value(&history)?;
                println!("{}", serde_json::to_string_pretty(&v)?);
                return Ok(ExitCode::SUCCESS);
            }
            println!("job {}  {}", job.id, shown_url(&job.url));
            println!("status     {}", job.status.as_str());
            println!("attempts   {}", job.attempts);
            println!(
                "retries    {} of {} used",
                job.retries_used, job.max_retries
            );
            if job.status == Status::Pending && job.retry_after.is_some() {
                println!("next try   {}", next_column(&job, now));
            }
            if let Some(e) = &job.error {
                // A failure's stored reason names its class already: "404 Not Found (fatal)",
                // "timed out after 2 s (transient); retry budget of 1 spent".
                match job.error_class.map(|c| c.as_str()) {
                    Some(class) if !e.contains(&format!("({class})")) => {
                        println!("error      {} ({class})", printable(e))
                    }
                    _ => println!("error      {}", printable(e)),
                }
            }
            if let Some(u) = &job.final_url {
                println!("final url  {}", shown_url(u));
            }
            if let Some(t) = &job.title {
                println!("title      {}", printable(t));
            }
            if let Some(d) = &job.document {
                println!("document   {d}");
            }
            if job.status == Status::Done && job.stage == Some(Stage::Archived) {
                let at = job
                    .reference
                    .as_ref()
                    .and_then(|r| r.archived_at.as_deref());
                println!(
                    "archived   from the Wayback Machine, as of {}",
                    at.unwrap_or("-")
                );
            }
            println!("batch      {}", job.batch.as_deref().unwrap_or("-"));
            println!("history:");
            for a in history {
                let delay = a
                    .delay_ms
                    .map(|d| {
                        format!(
                            ", then waited {}",
                            policy::human_duration(Duration::from_millis(d.max(0) as u64))
                        )
                    })
                    .unwrap_or_default();
                println!(
                    "  #{} {}  {}{}{}{}{}",
                    a.number,
                    rfc3339(a.started_at),
                    a.stage
                        .map(|s| format!("{}: ", s.as_str()))
                        .unwrap_or_default(),
                    a.outcome.as_deref().unwrap_or("in flight"),
                    a.http_status
                        .map(|s| format!(" HTTP {s}"))
                        .unwrap_or_default(),
                    a.error
                        .map(|e| format!(": {}", printable(&e)))
                        .unwrap_or_default(),
                    delay
                );
            }
            Ok(ExitCode::SUCCESS)
        }
        JobsCommand::Retry { ids, dead, host } => {
            if dead {
                let ids = store.retry_dead(host.as_deref(), policy.max_retries, now)?;
                println!(
                    "{} dead job{} queued again",
                    ids.len(),
                    if ids.len() == 1 { "" } else { "s" }
                );
                return Ok(ExitCode::SUCCESS);
            }
            let results = store.retry(&ids, policy.max_retries, now)?;
            report_actions(&results, "queued again")
        }
        JobsCommand::Cancel { ids } => {
            let results = store.cancel(&ids, now)?;
            report_actions(&results, "cancelled")
        }
    }
}

fn report_actions(results: &[ActionResult], verb: &str) -> anyhow::Result<ExitCode> {
    let mut failed = false;
    for r in results {
        match r {
            ActionResult::Done { id } => println!("{verb} {id}"),
            // Failures go where `jobs show` sends its own: standard error.
            ActionResult::NotFound { id } => {
                failed = true;
                eprintln!("no job {id}");
            }
            ActionResult::WrongState { id, status } => {
                failed = true;
                eprintln!("job {id} is {}: nothing to do", status.as_str());
            }
        }
    }
    Ok(if failed {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    })
}

fn next_column(j: &Job, now: i64) -> String {
    match (j.status, j.retry_after) {
        (Status::Pending, Some(t)) if t > now => {
            format!("in {}", wait_until(t, now))
        }
        (Status::Pending, _) => "now".into(),
        _ => "-".into(),
    }
}

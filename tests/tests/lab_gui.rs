//! The window on a lab's shared PostgreSQL database: set in Settings as a person would, used
//! from the next start, with the queue other members see. The real `gleaner` window under
//! Xvfb, driven through tauri-driver + WebKitWebDriver (as in gui.rs).

use gleaner::engine::postgres::testing::fresh_database_url;
use gleaner_tests::desktop::{DesktopSession, gui};
use gleaner_tests::server::FaultServer;
use gleaner_tests::{Sandbox, stderr};

const FIELD: &str =
    "Shared database (PostgreSQL), for a lab whose machines share one queue and library";

async fn value(field: &fantoccini::elements::Element) -> String {
    field.prop("value").await.ok().flatten().unwrap_or_default()
}

#[test]
fn a_shared_database_set_in_the_window_is_used_from_the_next_start() {
    gui(async {
        let server = FaultServer::start();
        let database = fresh_database_url();
        let password = url::Url::parse(&database)
            .expect("the test server's address")
            .password()
            .map(str::to_string);
        let data = tempfile::tempdir().expect("data folder");
        let saved = data.path().join("database-url");

        // First start: the data folder's own queue. An address that is not PostgreSQL's is
        // refused with what to give instead, and nothing is saved.
        let s = DesktopSession::launch_in(data.path()).await;
        s.open_settings().await;
        let field = s.by_label(FIELD).await;
        assert_eq!(value(&field).await, "", "no shared database at first");
        field
            .send_keys("mysql://ann@db.lab/gleaner")
            .await
            .expect("type");
        s.click("settings-save").await;
        s.wait_text(
            "settings-error",
            |t| {
                t == "The shared database must be a PostgreSQL address, like \
                      postgres://user:password@host:5432/gleaner."
            },
            "the refusal",
        )
        .await;
        assert!(!saved.exists(), "a refused address is not saved");
        field.clear().await.expect("clear");
        field.send_keys(&database).await.expect("type");
        assert_eq!(
            s.text("settings-error").await,
            "",
            "the refusal goes once the address is changed"
        );
        s.screenshot("settings-shared-database").await;
        s.click("settings-save").await;
        s.wait_text(
            "status",
            |t| {
                t == "Settings saved and applied. The shared database is used from the next \
                      start of Gleaner."
            },
            "the save, saying when it takes effect",
        )
        .await;
        assert_eq!(
            std::fs::read_to_string(&saved).expect("saved").trim(),
            database
        );
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt as _;
            let mode = std::fs::metadata(&saved)
                .expect("meta")
                .permissions()
                .mode();
            assert_eq!(
                mode & 0o077,
                0,
                "the saved password is readable by its owner alone"
            );
        }
        // Shown again with its password masked (that saving the masked form keeps the password
        // is database.rs's unit test).
        s.open_settings().await;
        let shown = value(&s.by_label(FIELD).await).await;
        assert!(shown.starts_with("postgres://"), "{shown}");
        if let Some(password) = &password {
            assert!(!shown.contains(password.as_str()), "{shown}");
        }
        s.finish().await;

        // The next start, on a dark desktop: the window's queue is the shared one.
        let s =
            DesktopSession::launch_in_with_env(data.path(), &[("GTK_THEME", "Adwaita:dark")]).await;
        s.type_into("urls", &server.url("/ok/lab")).await;
        s.click("add").await;
        let rows = s
            .wait_rows(
                |r| r.len() == 1 && r[0].get("Status").is_some_and(|v| v == "done"),
                "the job to be done",
            )
            .await;
        assert!(rows[0]["URL"].ends_with("/ok/lab"), "{rows:?}");
        // The footer says which queue this is: where the database is, and nothing secret.
        let place = s
            .wait_text(
                "queue-place",
                |t| !t.is_empty(),
                "the footer to name the queue",
            )
            .await;
        let at = database
            .split_once('@')
            .and_then(|(_, rest)| rest.split('?').next())
            .expect("host in the address");
        assert_eq!(place, format!("Shared queue: {at}"), "{database}");
        if let Some(password) = &password {
            assert!(!place.contains(password.as_str()), "{place}");
        }
        s.screenshot("shared-database-dark").await;
        assert_eq!(server.completions("/ok/lab"), 1);

        // Another member, with a data folder of its own, sees the job and its document: they
        // are in the database, not in this computer's folder.
        let other = Sandbox::new();
        let out = other
            .cmd()
            .env("GLEANER_DATABASE_URL", &database)
            .args(["stats", "--json"])
            .output()
            .expect("run gleaner");
        assert!(out.status.success(), "{}", stderr(&out));
        let stats: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
        assert_eq!(stats["done"].as_u64(), Some(1), "{stats}");
        let local_jobs = rusqlite::Connection::open(s.db_path())
            .ok()
            .and_then(|c| {
                c.query_row("SELECT count(*) FROM jobs", [], |r| r.get::<_, i64>(0))
                    .ok()
            })
            .unwrap_or(0);
        assert_eq!(local_jobs, 0, "the data folder's own queue took no job");
        s.finish().await;
    });
}

/// A shared database that cannot be reached at the start (a laptop off the lab's network):
/// the window opens on this computer's own queue and says so above the jobs for as long as it
/// runs, rather than not opening at all, which would leave no way to change the address.
#[test]
fn an_unreachable_shared_database_opens_the_window_on_this_computers_queue_and_says_so() {
    gui(async {
        let server = FaultServer::start();
        let data = tempfile::tempdir().expect("data folder");
        // Nothing listens on port 1.
        let address = "postgres://ann:s3cret@127.0.0.1:1/gleaner";
        std::fs::write(data.path().join("database-url"), format!("{address}\n")).expect("save");

        let s = DesktopSession::launch_in(data.path()).await;
        let notice = s
            .wait_text(
                "queue-state",
                |t| t.starts_with("Not on the shared database: "),
                "the notice",
            )
            .await;
        assert!(notice.contains("127.0.0.1:1"), "{notice}");
        assert!(
            !notice.contains("s3cret"),
            "the password is never shown: {notice}"
        );
        assert!(
            notice.contains(
                "This window uses this computer's own queue, and links added now stay in it; \
                 Gleaner tries the shared database again at its next start (change or clear \
                 its address in Settings)."
            ),
            "{notice}"
        );
        let place_hidden = s
            .js(
                "return document.getElementById('queue-place').hidden;",
                vec![],
            )
            .await;
        assert_eq!(
            place_hidden,
            serde_json::json!(true),
            "no shared queue is named while on this computer's own"
        );
        s.screenshot("shared-database-unreachable").await;

        s.type_into("urls", &server.url("/ok/here")).await;
        s.click("add").await;
        s.wait_rows(
            |r| r.len() == 1 && r[0].get("Status").is_some_and(|v| v == "done"),
            "the job to be done on this computer's queue",
        )
        .await;
        let local_jobs: i64 = s
            .sql()
            .query_row("SELECT count(*) FROM jobs", [], |r| r.get(0))
            .expect("the data folder's queue");
        assert_eq!(local_jobs, 1);
        // The notice stays while the window runs, and Settings still holds the address.
        assert!(
            s.text("queue-state")
                .await
                .starts_with("Not on the shared database: ")
        );
        s.open_settings().await;
        let shown = value(&s.by_label(FIELD).await).await;
        assert!(
            shown.starts_with("postgres://ann") && shown.contains("127.0.0.1:1"),
            "{shown}"
        );
        assert!(!shown.contains("s3cret"), "{shown}");
        s.finish().await;
    });
}

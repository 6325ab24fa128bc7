//! The real desktop app under test: a private X server (Xvfb), a private D-Bus session bus with a
//! notification server of our own on it, and `tauri-driver` + `WebKitWebDriver` driving the real
//! `gleaner` binary over WebDriver.
//!
//! Every process is started here and killed for real when the session ends (or the test panics).

use std::collections::HashMap;
use std::io::{BufRead as _, BufReader};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use fantoccini::{Client, ClientBuilder, Locator};
use serde_json::{Value, json};

/// One `org.freedesktop.Notifications.Notify` call seen on the private bus.
#[derive(Debug, Clone)]
pub struct Notified {
    pub app_name: String,
    pub summary: String,
    pub body: String,
}

/// The notification server: records every Notify call and answers like a desktop would.
struct NotificationServer {
    log: Arc<Mutex<Vec<Notified>>>,
    next_id: u32,
}

#[zbus::interface(name = "org.freedesktop.Notifications")]
impl NotificationServer {
    #[allow(clippy::too_many_arguments)]
    fn notify(
        &mut self,
        app_name: String,
        _replaces_id: u32,
        _app_icon: String,
        summary: String,
        body: String,
        _actions: Vec<String>,
        _hints: HashMap<String, zbus::zvariant::OwnedValue>,
        _expire_timeout: i32,
    ) -> u32 {
        if let Ok(mut log) = self.log.lock() {
            log.push(Notified {
                app_name,
                summary,
                body,
            });
        }
        self.next_id += 1;
        self.next_id
    }

    /// As GNOME Shell, KDE Plasma, dunst and mako do: the body is read as markup.
    fn get_capabilities(&self) -> Vec<String> {
        vec!["body".into(), "body-markup".into()]
    }

    fn get_server_information(&self) -> (String, String, String, String) {
        (
            "gleaner-test-notifications".into(),
            "gleaner".into(),
            "1.0".into(),
            "1.2".into(),
        )
    }

    fn close_notification(&self, _id: u32) {}
}

/// A StatusNotifierWatcher, as a desktop's panel runs one: tray icons (StatusNotifierItems)
/// register with it, and the test then reads and clicks their menu over `com.canonical.dbusmenu`.
struct TrayWatcher {
    /// (bus name of the registering app, the service or object path it gave)
    items: Arc<Mutex<Vec<(String, String)>>>,
}

#[zbus::interface(name = "org.kde.StatusNotifierWatcher")]
impl TrayWatcher {
    fn register_status_notifier_item(
        &self,
        service: String,
        #[zbus(header)] header: zbus::message::Header<'_>,
    ) {
        let sender = header.sender().map(|s| s.to_string()).unwrap_or_default();
        if let Ok(mut items) = self.items.lock() {
            items.push((sender, service));
        }
    }

    fn register_status_notifier_host(&self, _service: String) {}

    #[zbus(property)]
    fn registered_status_notifier_items(&self) -> Vec<String> {
        self.items
            .lock()
            .map(|i| i.iter().map(|(s, p)| format!("{s}{p}")).collect())
            .unwrap_or_default()
    }

    #[zbus(property)]
    fn is_status_notifier_host_registered(&self) -> bool {
        true
    }

    #[zbus(property)]
    fn protocol_version(&self) -> i32 {
        0
    }
}

/// One entry of the tray icon's menu.
#[derive(Debug, Clone)]
pub struct TrayEntry {
    pub id: i32,
    pub label: String,
    pub enabled: bool,
}

/// The processes a session started. Dropping it kills them, newest first, so a launch that
/// panics half-way (no WebDriver session, say) leaves no Xvfb or driver behind.
struct Children(Vec<(String, Child)>);

impl Drop for Children {
    fn drop(&mut self) {
        while let Some((name, mut child)) = self.0.pop() {
            if name == "tauri-driver" {
                // The whole group: tauri-driver, WebKitWebDriver and the app.
                let _ = Command::new("kill")
                    .args(["-KILL", "--", &format!("-{}", child.id())])
                    .status();
            }
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// Serializes GUI sessions within a test binary: each one runs a whole WebKit, and two at once
/// on a small machine only make both slow.
pub static GUI_LOCK: Mutex<()> = Mutex::new(());

/// Run one GUI scenario on its own runtime, one at a time (each starts its own X, bus and app).
pub fn gui(scenario: impl std::future::Future<Output = ()>) {
    let _one_at_a_time = GUI_LOCK.lock().unwrap_or_else(|p| p.into_inner());
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("tokio runtime")
        .block_on(scenario);
}

/// Fields drop in order: the processes go first, then the bus connection, then the data folder.
pub struct DesktopSession {
    /// Killed in reverse order on drop: driver (with the app in its process group), bus, X.
    _children: Children,
    pub client: Client,
    bus: zbus::blocking::Connection,
    /// The app's data folder (GLEANER_DATA_DIR).
    pub data_dir: PathBuf,
    _owned_dir: Option<tempfile::TempDir>,
    notifications: Arc<Mutex<Vec<Notified>>>,
    tray_items: Arc<Mutex<Vec<(String, String)>>>,
    pub display: String,
    pub bus_address: String,
    /// The app's output, outside the data folder: a test that fills the data folder's disk
    /// still gets the whole log.
    log_dir: tempfile::TempDir,
}

fn find_tool(name: &str) -> PathBuf {
    let mut dirs: Vec<PathBuf> = std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).collect())
        .unwrap_or_default();
    if let Some(home) = std::env::var_os("CARGO_HOME") {
        dirs.push(PathBuf::from(home).join("bin"));
    }
    if let Some(home) = std::env::var_os("HOME") {
        dirs.push(PathBuf::from(home).join(".cargo/bin"));
    }
    dirs.into_iter()
        .map(|d| d.join(name))
        .find(|p| p.is_file())
        .unwrap_or_else(|| {
            panic!("{name} is not installed: run `scripts/install-deps.sh --gui` (the GUI tests need it)")
        })
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free loopback port")
}

/// Spawn `cmd` and return it with the first line it prints on stdout.
fn spawn_reading_line(mut cmd: Command, what: &str) -> (Child, String) {
    let mut child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {what}: {e}"));
    let stdout = child.stdout.take().expect("piped stdout");
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut line = String::new();
        let _ = BufReader::new(stdout).read_line(&mut line);
        let _ = tx.send(line);
    });
    let line = rx
        .recv_timeout(Duration::from_secs(20))
        .unwrap_or_else(|_| panic!("{what} printed nothing within 20 s"));
    assert!(!line.trim().is_empty(), "{what} exited without printing");
    (child, line.trim().to_string())
}

/// The app's X windows titled "Gleaner", each with whether it is mapped (on screen).
fn gleaner_windows(conn: &impl x11rb::connection::Connection, screen: usize) -> Vec<(u32, bool)> {
    use x11rb::protocol::xproto::{AtomEnum, ConnectionExt as _, MapState};
    let mut found = Vec::new();
    let mut stack = vec![conn.setup().roots[screen].root];
    while let Some(w) = stack.pop() {
        if let Some(tree) = conn.query_tree(w).ok().and_then(|c| c.reply().ok()) {
            stack.extend(tree.children);
        }
        let title = conn
            .get_property(false, w, AtomEnum::WM_NAME, AtomEnum::ANY, 0, 64)
            .ok()
            .and_then(|c| c.reply().ok());
        if title.is_some_and(|t| t.value == b"Gleaner") {
            let shown = conn
                .get_window_attributes(w)
                .ok()
                .and_then(|c| c.reply().ok())
                .is_some_and(|a| a.map_state == MapState::VIEWABLE);
            found.push((w, shown));
        }
    }
    found
}

impl DesktopSession {
    /// Whether the app's window is on screen (mapped), as opposed to hidden or gone.
    pub fn window_shown(&self) -> bool {
        let (conn, screen) = x11rb::connect(Some(&self.display)).expect("connect to X");
        gleaner_windows(&conn, screen)
            .iter()
            .any(|&(_, shown)| shown)
    }

    /// Close the window as a window manager's close button does: a WM_DELETE_WINDOW message,
    /// which the app may answer by hiding instead.
    pub fn close_window_like_a_user(&self) {
        use x11rb::protocol::xproto::{ClientMessageEvent, ConnectionExt as _, EventMask};
        use x11rb::wrapper::ConnectionExt as _;
        let (conn, screen) = x11rb::connect(Some(&self.display)).expect("connect to X");
        let atom = |name: &[u8]| {
            conn.intern_atom(false, name)
                .expect("intern atom")
                .reply()
                .expect("atom")
                .atom
        };
        let (protocols, delete) = (atom(b"WM_PROTOCOLS"), atom(b"WM_DELETE_WINDOW"));
        let shown: Vec<u32> = gleaner_windows(&conn, screen)
            .into_iter()
            .filter_map(|(w, shown)| shown.then_some(w))
            .collect();
        assert!(!shown.is_empty(), "no Gleaner window on screen to close");
        for w in shown {
            let event =
                ClientMessageEvent::new(32, w, protocols, [delete, x11rb::CURRENT_TIME, 0, 0, 0]);
            conn.send_event(false, w, EventMask::NO_EVENT, event)
                .expect("send WM_DELETE_WINDOW");
        }
        conn.sync().expect("X round trip");
    }

    /// Take the tray away, as a desktop without a panel that shows tray icons (stock GNOME).
    pub fn remove_tray(&self) {
        let released = self
            .bus
            .release_name("org.kde.StatusNotifierWatcher")
            .expect("release the StatusNotifierWatcher name");
        assert!(released, "the session's bus had no tray to take away");
    }

    /// Start X, the bus, the notification server, tauri-driver, and the app on a fresh data
    /// folder; returns once the window has loaded and said "Ready.".
    pub async fn launch() -> DesktopSession {
        let dir = tempfile::tempdir().expect("temp data dir");
        Self::start(dir.path().to_path_buf(), Some(dir), &[]).await
    }

    /// As [`launch`](Self::launch), on an existing data folder that outlives the session.
    pub async fn launch_in(data_dir: &Path) -> DesktopSession {
        Self::start(data_dir.to_path_buf(), None, &[]).await
    }

    /// As [`launch_in`](Self::launch_in), with more environment for the app, as a desktop
    /// session sets it (`GTK_THEME=Adwaita:dark` for a dark desktop, say).
    pub async fn launch_in_with_env(data_dir: &Path, env: &[(&str, &str)]) -> DesktopSession {
        Self::start(data_dir.to_path_buf(), None, env).await
    }

    async fn start(
        data_dir: PathBuf,
        owned: Option<tempfile::TempDir>,
        env: &[(&str, &str)],
    ) -> DesktopSession {
        let app = crate::gleaner_bin();
        let mut children = Children(Vec::new());

        let mut xvfb = Command::new(find_tool("Xvfb"));
        xvfb.args([
            "-displayfd",
            "1",
            "-screen",
            "0",
            "1280x800x24",
            "-nolisten",
            "tcp",
        ]);
        let (x, number) = spawn_reading_line(xvfb, "Xvfb");
        children.0.push(("Xvfb".to_string(), x));
        let display = format!(":{number}");

        let mut dbus = Command::new(find_tool("dbus-daemon"));
        dbus.args(["--session", "--nofork", "--print-address=1"]);
        let (bus, bus_address) = spawn_reading_line(dbus, "dbus-daemon");
        children.0.push(("dbus-daemon".to_string(), bus));

        let notifications = Arc::new(Mutex::new(Vec::new()));
        let server = NotificationServer {
            log: notifications.clone(),
            next_id: 0,
        };
        let tray_items = Arc::new(Mutex::new(Vec::new()));
        let watcher = TrayWatcher {
            items: tray_items.clone(),
        };
        let bus_conn = zbus::blocking::connection::Builder::address(bus_address.as_str())
            .and_then(|b| b.name("org.freedesktop.Notifications"))
            .and_then(|b| b.name("org.kde.StatusNotifierWatcher"))
            .and_then(|b| b.serve_at("/org/freedesktop/Notifications", server))
            .and_then(|b| b.serve_at("/StatusNotifierWatcher", watcher))
            .and_then(|b| b.build())
            .expect("notification server and tray watcher on the private bus");

        let (port, native_port) = (free_port(), free_port());
        let log_dir = tempfile::tempdir().expect("log dir");
        let log_path = log_dir.path().join("app.log");
        let log = std::fs::File::create(&log_path).expect("app log file");
        let mut driver = Command::new(find_tool("tauri-driver"));
        driver
            .args([
                "--port",
                &port.to_string(),
                "--native-port",
                &native_port.to_string(),
                "--native-driver",
            ])
            .arg(find_tool("WebKitWebDriver"))
            .env("DISPLAY", &display)
            .env("DBUS_SESSION_BUS_ADDRESS", &bus_address)
            .env("GLEANER_DATA_DIR", &data_dir)
            .env("GLEANER_LOG", "info")
            // Window state, WebKit caches and the like stay inside this session's folder.
            .env("XDG_CONFIG_HOME", data_dir.join("xdg-config"))
            .env("XDG_CACHE_HOME", data_dir.join("xdg-cache"))
            .env("XDG_DATA_HOME", data_dir.join("xdg-data"))
            .env_remove("WAYLAND_DISPLAY")
            .envs(env.iter().copied())
            .stdin(Stdio::null())
            .stdout(log.try_clone().expect("log handle"))
            .stderr(log);
        {
            use std::os::unix::process::CommandExt as _;
            // Its own process group, so the app it starts dies with it.
            driver.process_group(0);
        }
        let driver = driver.spawn().expect("cannot start tauri-driver");
        children.0.push(("tauri-driver".to_string(), driver));

        // tauri-driver forwards to WebKitWebDriver: both must be listening before a session.
        let deadline = Instant::now() + Duration::from_secs(20);
        for p in [port, native_port] {
            while TcpStream::connect(("127.0.0.1", p)).is_err() {
                assert!(
                    Instant::now() < deadline,
                    "tauri-driver / WebKitWebDriver did not listen on port {p} within 20 s"
                );
                std::thread::sleep(Duration::from_millis(50));
            }
        }

        let mut caps = serde_json::Map::new();
        caps.insert(
            "tauri:options".into(),
            json!({ "application": app.to_string_lossy() }),
        );
        let mut attempt = 0;
        let client = loop {
            attempt += 1;
            let connector = hyper_util::client::legacy::connect::HttpConnector::new();
            match ClientBuilder::new(connector)
                .capabilities(caps.clone())
                .connect(&format!("http://127.0.0.1:{port}"))
                .await
            {
                Ok(client) => break client,
                // A loaded machine can be slow to start WebKit; a second try is honest here,
                // since what is under test is the app, not session start-up.
                Err(e) if attempt < 3 => {
                    eprintln!("WebDriver session attempt {attempt} failed: {e:?}; retrying");
                    tokio::time::sleep(Duration::from_millis(500)).await;
                }
                Err(e) => {
                    let log = std::fs::read_to_string(&log_path).unwrap_or_default();
                    panic!(
                        "cannot start a WebDriver session with the app: {e:?}\n--- app log ---\n{log}"
                    )
                }
            }
        };
        let session = DesktopSession {
            client,
            data_dir,
            _owned_dir: owned,
            notifications,
            tray_items,
            _children: children,
            bus: bus_conn,
            display,
            bus_address,
            log_dir,
        };
        session
            .wait_text("status", |t| t == "Ready.", "the window to load")
            .await;
        session
    }

    /// The well-known names owned on this session's bus.
    pub fn bus_names(&self) -> Vec<String> {
        self.bus
            .call_method(
                Some("org.freedesktop.DBus"),
                "/org/freedesktop/DBus",
                Some("org.freedesktop.DBus"),
                "ListNames",
                &(),
            )
            .and_then(|reply| reply.body().deserialize::<Vec<String>>())
            .expect("ListNames")
            .into_iter()
            .filter(|n| !n.starts_with(':'))
            .collect()
    }

    /// Whether a `gleaner` process for this session's data folder is still running.
    pub fn app_running(&self) -> bool {
        !self.app_pids().is_empty()
    }

    /// The `gleaner` processes running over this session's data directory.
    pub fn app_pids(&self) -> Vec<u32> {
        let want = format!("GLEANER_DATA_DIR={}", self.data_dir.display());
        let Ok(procs) = std::fs::read_dir("/proc") else {
            return Vec::new();
        };
        procs
            .flatten()
            .filter(|p| {
                let is_gleaner = std::fs::read_link(p.path().join("exe"))
                    .is_ok_and(|e| e.file_name().is_some_and(|n| n == "gleaner"));
                is_gleaner
                    && std::fs::read(p.path().join("environ"))
                        .is_ok_and(|env| env.split(|b| *b == 0).any(|v| v == want.as_bytes()))
            })
            .filter_map(|p| p.file_name().to_str()?.parse().ok())
            .collect()
    }

    pub fn db_path(&self) -> PathBuf {
        self.data_dir.join("gleaner.db")
    }

    /// The session's database, for checking what was committed.
    pub fn sql(&self) -> rusqlite::Connection {
        let c = rusqlite::Connection::open(self.db_path()).expect("open db");
        c.busy_timeout(Duration::from_secs(10))
            .expect("busy timeout");
        c
    }

    /// Run the CLI against this session's data folder (beside the open window) and check it
    /// succeeded.
    pub fn cli<S: AsRef<std::ffi::OsStr> + std::fmt::Debug>(&self, args: &[S]) {
        let out = Command::new(crate::gleaner_bin())
            .env("GLEANER_DATA_DIR", &self.data_dir)
            .args(args)
            .output()
            .expect("run the CLI");
        assert!(
            out.status.success(),
            "gleaner {args:?}: {}",
            crate::stderr(&out)
        );
    }

    /// The app's own log (tauri-driver, WebKitWebDriver and the app write to it).
    pub fn app_log(&self) -> String {
        std::fs::read_to_string(self.log_dir.path().join("app.log")).unwrap_or_default()
    }

    pub fn notifications(&self) -> Vec<Notified> {
        self.notifications
            .lock()
            .map(|l| l.clone())
            .unwrap_or_default()
    }

    /// The tray icon's menu path on the bus, once the app has registered its icon.
    fn tray_menu_path(&self) -> (String, String) {
        let deadline = Instant::now() + Duration::from_secs(15);
        let (sender, service) = loop {
            if let Some(item) = self.tray_items.lock().ok().and_then(|i| i.first().cloned()) {
                break item;
            }
            assert!(
                Instant::now() < deadline,
                "no tray icon registered with the StatusNotifierWatcher\n--- app log ---\n{}",
                self.app_log()
            );
            std::thread::sleep(Duration::from_millis(50));
        };
        let (dest, path) = if service.starts_with('/') {
            (sender, service)
        } else {
            (service, "/StatusNotifierItem".to_string())
        };
        let item = zbus::blocking::Proxy::new(
            &self.bus,
            dest.as_str(),
            path.as_str(),
            "org.kde.StatusNotifierItem",
        )
        .expect("tray item proxy");
        let menu: zbus::zvariant::OwnedObjectPath =
            item.get_property("Menu").expect("the tray item's Menu");
        drop(item);
        (dest, menu.to_string())
    }

    /// The tray icon's menu entries, as a panel would show them.
    pub fn tray_menu(&self) -> Vec<TrayEntry> {
        use zbus::zvariant::{OwnedValue, Structure, Value};
        type Layout = (i32, HashMap<String, OwnedValue>, Vec<OwnedValue>);
        let (dest, menu) = self.tray_menu_path();
        let reply = self
            .bus
            .call_method(
                Some(dest.as_str()),
                menu.as_str(),
                Some("com.canonical.dbusmenu"),
                "GetLayout",
                &(0i32, -1i32, Vec::<String>::new()),
            )
            .expect("GetLayout");
        let (_revision, (_root, _props, children)): (u32, Layout) =
            reply.body().deserialize().expect("a dbusmenu layout");
        let mut out = Vec::new();
        for child in children {
            let Ok(fields) = Structure::try_from(child).map(|s| s.into_fields()) else {
                continue;
            };
            let (Some(Value::I32(id)), Some(Value::Dict(props))) = (fields.first(), fields.get(1))
            else {
                continue;
            };
            let (mut label, mut enabled) = (String::new(), true);
            for (key, value) in props.iter() {
                let value = match value {
                    Value::Value(inner) => inner.as_ref(),
                    other => other,
                };
                match (key, value) {
                    (Value::Str(k), Value::Str(v)) if k.as_str() == "label" => {
                        label = v.as_str().replace('_', "");
                    }
                    (Value::Str(k), Value::Bool(b)) if k.as_str() == "enabled" => enabled = *b,
                    _ => {}
                }
            }
            if !label.is_empty() {
                out.push(TrayEntry {
                    id: *id,
                    label,
                    enabled,
                });
            }
        }
        out
    }

    /// Click the tray menu entry labelled `label`.
    pub fn tray_click(&self, label: &str) {
        let entry = self
            .tray_menu()
            .into_iter()
            .find(|e| e.label == label)
            .unwrap_or_else(|| panic!("no tray entry {label:?}: {:?}", self.tray_menu()));
        let (dest, menu) = self.tray_menu_path();
        self.bus
            .call_method(
                Some(dest.as_str()),
                menu.as_str(),
                Some("com.canonical.dbusmenu"),
                "Event",
                &(entry.id, "clicked", zbus::zvariant::Value::from(0i32), 0u32),
            )
            .expect("click the tray entry");
    }

    pub async fn by_id(&self, id: &str) -> fantoccini::elements::Element {
        self.client
            .find(Locator::Id(id))
            .await
            .unwrap_or_else(|e| panic!("no element #{id}: {e}"))
    }

    pub async fn text(&self, id: &str) -> String {
        self.by_id(id).await.text().await.unwrap_or_default()
    }

    /// The form control a label names, found as a person finds it: by the label's words.
    pub async fn by_label(&self, label: &str) -> fantoccini::elements::Element {
        let xpath = format!("//label[normalize-space(.)='{label}']");
        let found = self
            .client
            .find(Locator::XPath(&xpath))
            .await
            .unwrap_or_else(|e| panic!("no label {label:?}: {e}"));
        let id = found
            .attr("for")
            .await
            .ok()
            .flatten()
            .unwrap_or_else(|| panic!("the label {label:?} names no control"));
        self.by_id(&id).await
    }

    /// Open the Settings dialog from the header, and wait until it shows.
    pub async fn open_settings(&self) {
        self.click("open-settings").await;
        self.wait_text(
            "settings-heading",
            |t| t == "Settings",
            "the settings dialog",
        )
        .await;
    }

    /// Type into a field as a person would: click it, then keys. A newline is the Enter key
    /// (WebKitWebDriver types a literal "\n" as nothing).
    pub async fn type_into(&self, id: &str, text: &str) {
        let field = self.by_id(id).await;
        field.click().await.expect("click field");
        field
            .send_keys(&text.replace('\n', "\u{E007}"))
            .await
            .expect("type");
    }

    pub async fn click(&self, id: &str) {
        self.by_id(id)
            .await
            .click()
            .await
            .unwrap_or_else(|e| panic!("cannot click #{id}: {e}"));
    }

    pub async fn js(&self, script: &str, args: Vec<Value>) -> Value {
        self.client
            .execute(script, args)
            .await
            .unwrap_or_else(|e| panic!("script failed: {e}\n{script}"))
    }

    /// Click what `css` matches. Live updates re-render the job table, the counts and the
    /// library's results, so an element found a moment ago may be gone: find it again.
    pub async fn click_css(&self, css: &str) {
        let mut tries = 0;
        loop {
            let clicked = match self.client.find(Locator::Css(css)).await {
                Ok(found) => found.click().await.map(|_| ()),
                Err(e) => Err(e),
            };
            match clicked {
                Ok(()) => return,
                Err(e) if tries < 20 => {
                    tries += 1;
                    eprintln!("{css} not clickable yet: {e}");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
                Err(e) => panic!("cannot click {css}: {e}"),
            }
        }
    }

    /// Click a job's row and wait for its details.
    pub async fn select_row(&self, id: &str) {
        self.click_css(&format!("#job-rows tr[data-id=\"{id}\"] td.url"))
            .await;
        self.wait_text(
            "details-heading",
            |t| t == format!("Job {id}"),
            "the details pane",
        )
        .await;
    }

    /// The job table as the user sees it: one map per row, keyed by column heading.
    pub async fn rows(&self) -> Vec<HashMap<String, String>> {
        let v = self
            .js(
                "const heads = Array.from(document.querySelectorAll('#jobs thead th')).map((th) => th.textContent.trim());\
                 return Array.from(document.querySelectorAll('#job-rows tr')).map((tr) => {\
                   const row = { id: tr.dataset.id };\
                   Array.from(tr.children).forEach((td, i) => { row[heads[i]] = td.textContent; });\
                   return row; });",
                vec![],
            )
            .await;
        serde_json::from_value(v).unwrap_or_default()
    }

    /// Poll until `ok` holds for the text of `#id`.
    pub async fn wait_text(&self, id: &str, ok: impl Fn(&str) -> bool, what: &str) -> String {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let t = self
                .client
                .find(Locator::Id(id))
                .await
                .ok()
                .map(|e| async move { e.text().await.unwrap_or_default() });
            let t = match t {
                Some(f) => f.await,
                None => String::new(),
            };
            if ok(&t) {
                return t;
            }
            if Instant::now() >= deadline {
                panic!(
                    "timed out waiting for {what}; #{id} says {t:?}; the status line says {:?}\n--- app log ---\n{}",
                    self.text("status").await,
                    self.app_log()
                );
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// Poll the job table until `ok` holds for its rows.
    pub async fn wait_rows(
        &self,
        ok: impl Fn(&[HashMap<String, String>]) -> bool,
        what: &str,
    ) -> Vec<HashMap<String, String>> {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let rows = self.rows().await;
            if ok(&rows) {
                return rows;
            }
            if Instant::now() >= deadline {
                panic!(
                    "timed out waiting for {what}; the status line says {:?}; rows: {rows:#?}\n--- app log ---\n{}",
                    self.text("status").await,
                    self.app_log()
                );
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// Save what the screen shows to `target/screenshots/<name>.png`.
    ///
    /// The X server's own pixels, once they hold still. WebKit paints in its own process, after
    /// the DOM changes: WebDriver's screenshot call once returned the page's first paint
    /// ("Loading…") in CI right after assertions on the finished page had passed, and one
    /// `import` after two animation frames showed the page before the change in 2 of 10 runs
    /// here (and a blank window when no script had run just before it). So each capture follows
    /// two animation frames, and captures repeat, 250 ms apart, until two in a row are the same;
    /// a page that never holds still keeps the last one after about 3 s.
    pub async fn screenshot(&self, name: &str) -> PathBuf {
        let dir = screenshot_dir();
        std::fs::create_dir_all(&dir).expect("screenshot dir");
        let path = dir.join(format!("{name}.png"));
        let capture = async || {
            self.client
                .execute_async(
                    "const done = arguments[arguments.length - 1]; \
                     requestAnimationFrame(() => requestAnimationFrame(() => done()));",
                    vec![],
                )
                .await
                .expect("wait for a paint");
            let out = Command::new(find_tool("import"))
                // No metadata, so equal pixels give equal bytes.
                .args([
                    "-display",
                    &self.display,
                    "-window",
                    "root",
                    "-strip",
                    "png:-",
                ])
                .output()
                .expect("run import (imagemagick)");
            assert!(out.status.success(), "import: {}", crate::stderr(&out));
            out.stdout
        };
        let mut shot = capture().await;
        for _ in 0..12 {
            tokio::time::sleep(Duration::from_millis(250)).await;
            let next = capture().await;
            let still = next == shot;
            shot = next;
            if still {
                break;
            }
        }
        std::fs::write(&path, shot).expect("write screenshot");
        path
    }

    /// End the WebDriver session (which closes the app), then stop everything else.
    pub async fn finish(self) {
        let DesktopSession { client, .. } = &self;
        if let Err(e) = client.clone().close().await {
            eprintln!("closing the WebDriver session: {e}");
        }
        drop(self);
    }
}

/// `target/screenshots`, beside the test binaries' profile folder.
pub fn screenshot_dir() -> PathBuf {
    let bin = crate::gleaner_bin();
    bin.parent()
        .and_then(Path::parent)
        .unwrap_or(Path::new("target"))
        .join("screenshots")
}

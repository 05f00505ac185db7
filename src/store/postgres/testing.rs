//! A real PostgreSQL server for the tests, started by the test process itself: found on `PATH`
//! (`initdb`) or in `/usr/lib/postgresql/*/bin`, initialised into a temporary folder, started
//! on a free loopback port with its socket in that folder (no system service), and stopped —
//! its folder removed — by a small watchdog when the test process ends. PostgreSQL refuses to
//! run as root, so under root the server runs as the `postgres` user the package creates.
//! Each test gets a database of its own on the one server.
//!
//! When no PostgreSQL is installed the tests that need it are skipped with a note, except under
//! `CI=true`, where they fail and say how to install it. The file is compiled into the library's
//! unit tests and, by path, into the integration tests.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicUsize, Ordering};

struct Server {
    bin: PathBuf,
    port: u16,
    /// Run the server's tools as this user (`postgres` when the tests run as root).
    user: Option<String>,
}

static SERVER: OnceLock<Result<Server, String>> = OnceLock::new();
static DATABASES: AtomicUsize = AtomicUsize::new(0);

/// The URL of a new, empty database on the tests' server; `None` (after a note on stderr) when
/// PostgreSQL is not installed and `CI` is not `true`.
pub(crate) fn database() -> Option<String> {
    let server = match SERVER.get_or_init(start) {
        Ok(server) => server,
        Err(reason) => {
            assert!(
                std::env::var("CI").as_deref() != Ok("true"),
                "the PostgreSQL tests need a PostgreSQL server: {reason}. Install it with \
                 `apt-get install -y postgresql` (its binaries go to /usr/lib/postgresql/*/bin)"
            );
            #[allow(clippy::print_stderr, reason = "the note that a test was skipped")]
            {
                eprintln!("note: skipping a PostgreSQL test: {reason}");
            }
            return None;
        }
    };
    let name = format!(
        "synapse_test_{}_{}",
        std::process::id(),
        DATABASES.fetch_add(1, Ordering::Relaxed)
    );
    let created = server
        .client("createdb")
        .arg(&name)
        .status()
        .map_err(|error| error.to_string())
        .and_then(|status| {
            status
                .success()
                .then_some(())
                .ok_or(format!("createdb exited with {status}"))
        });
    if let Err(error) = created {
        panic!("cannot create the test database {name}: {error}");
    }
    Some(format!(
        "postgres://postgres@127.0.0.1:{}/{name}",
        server.port
    ))
}

/// Drops a database made by [`database`] while clients may still be connected to it: the
/// store under a running server goes away.
#[allow(
    dead_code,
    reason = "the integration tests use it; the unit tests that include this file too do not"
)]
pub(crate) fn drop_database(url: &str) {
    let Some(Ok(server)) = SERVER.get() else {
        panic!("no test PostgreSQL server runs");
    };
    let name = url.rsplit('/').next().unwrap_or_default();
    let status = server
        .client("dropdb")
        .args(["--force", name])
        .status()
        .unwrap_or_else(|error| panic!("cannot run dropdb: {error}"));
    assert!(status.success(), "dropdb {name} exited with {status}");
}

impl Server {
    /// A client program of PostgreSQL's, pointed at this server as `postgres`.
    fn client(&self, tool: &str) -> Command {
        let mut command = self.command(tool);
        command.args([
            "-h",
            "127.0.0.1",
            "-p",
            &self.port.to_string(),
            "-U",
            "postgres",
        ]);
        command
    }

    fn command(&self, tool: &str) -> Command {
        let program = self.bin.join(tool);
        match &self.user {
            Some(user) => {
                let mut command = Command::new("runuser");
                command.args(["-u", user, "--"]).arg(program);
                command
            }
            None => Command::new(program),
        }
    }
}

/// The folder of PostgreSQL's programs: `initdb`'s on `PATH`, else the newest of
/// `/usr/lib/postgresql/*/bin`.
fn binaries() -> Option<PathBuf> {
    let on_path = std::env::var_os("PATH").and_then(|path| {
        std::env::split_paths(&path)
            .map(|folder| folder.join("initdb"))
            .find(|initdb| initdb.is_file())
    });
    if let Some(initdb) = on_path {
        let real = std::fs::canonicalize(&initdb).unwrap_or(initdb);
        return real.parent().map(Path::to_owned);
    }
    let mut installed: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .ok()?
        .filter_map(Result::ok)
        .filter_map(|entry| {
            let version = entry.file_name().to_str()?.parse().ok()?;
            let bin = entry.path().join("bin");
            bin.join("initdb").is_file().then_some((version, bin))
        })
        .collect();
    installed.sort();
    installed.pop().map(|(_, bin)| bin)
}

fn run(command: &mut Command, what: &str) -> Result<(), String> {
    let output = command
        .stdin(Stdio::null())
        .output()
        .map_err(|error| format!("cannot run {what}: {error}"))?;
    if output.status.success() {
        return Ok(());
    }
    Err(format!(
        "{what} failed ({}): {}{}",
        output.status,
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    ))
}

fn start() -> Result<Server, String> {
    let bin = binaries().ok_or("no `initdb` on PATH or in /usr/lib/postgresql/*/bin")?;
    let is_root = Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|output| output.stdout.trim_ascii() == b"0");
    let user = is_root.then(|| "postgres".to_owned());
    let folder = tempfile::Builder::new()
        .prefix("synapse-postgres-")
        .tempdir()
        .map_err(|error| format!("cannot make a folder for the server: {error}"))?
        .keep();
    if is_root {
        run(
            Command::new("chown")
                .args(["-R", "postgres:postgres"])
                .arg(&folder),
            "chown",
        )?;
    }
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .map_err(|error| format!("cannot find a free port: {error}"))?
        .port();
    let server = Server { bin, port, user };
    let data = folder.join("data");
    run(
        server
            .command("initdb")
            .args([
                "-A",
                "trust",
                "-U",
                "postgres",
                "-E",
                "UTF8",
                "--locale=C",
                "--no-sync",
                "-D",
            ])
            .arg(&data),
        "initdb",
    )?;
    let options = format!(
        "-p {port} -k {} -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=200",
        folder.display()
    );
    run(
        server
            .command("pg_ctl")
            .args(["-w", "-l"])
            .arg(folder.join("log"))
            .arg("-D")
            .arg(&data)
            .args(["-o", &options, "start"]),
        "pg_ctl start",
    )?;
    watch(&folder, &data)?;
    Ok(server)
}

/// Stops the server (a fast shutdown) and removes its folder once the test process is gone.
fn watch(folder: &Path, data: &Path) -> Result<(), String> {
    let script = format!(
        "while kill -0 {pid} 2>/dev/null; do sleep 0.2; done; \
         kill -INT \"$(head -n 1 '{pidfile}')\" 2>/dev/null; \
         while [ -e '{pidfile}' ]; do sleep 0.1; done; rm -rf '{folder}'",
        pid = std::process::id(),
        pidfile = data.join("postmaster.pid").display(),
        folder = folder.display(),
    );
    Command::new("sh")
        .args(["-c", &script])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .map(drop)
        .map_err(|error| format!("cannot start the server's watchdog: {error}"))
}

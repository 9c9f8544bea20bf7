//! README's examples run as written: every indented command line of the
//! ftctl, ftrec and ftcat sections goes to `sh -c` as it stands, in a work
//! directory whose trace.dat is a fixture recording, and must exit 0.
//!
//! The ftcat examples that read files run everywhere. The others touch
//! tracefs: they run only as root with tracefs and without
//! FTBOX_NO_LIVE=1 (else skipped with a message), and in a private
//! instance: on PATH, `ftctl` and `ftrec` are wrappers that add `-B
//! INSTANCE` (`ftrec`: `--private` when recording, and `-d 1` when the
//! example would run until Ctrl-C), and `ftcat --live` reads that instance.
//! Lines marked `# needs function tracing` are left out (most kernels this
//! runs on refuse it), and `# needs CONFIG_TRACER_SNAPSHOT` on a kernel
//! without a snapshot buffer.

use std::path::{Path, PathBuf};
use std::process::Command;

fn ftbox() -> PathBuf {
    std::env::var_os("FTBOX_BIN").map(PathBuf::from).unwrap_or_else(|| PathBuf::from(env!("CARGO_BIN_EXE_ftbox")))
}

fn readme() -> String {
    std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md")).unwrap()
}

/// The example command lines of the `## APPLET` section: indented lines
/// that start with `APPLET `, as written (comments included: `sh` drops
/// them).
fn examples(readme: &str, applet: &str) -> Vec<String> {
    let head = format!("## {applet}\n");
    let at = readme.find(&head).unwrap_or_else(|| panic!("README has no {head:?}"));
    let section = &readme[at + head.len()..];
    let section = &section[..section.find("\n## ").unwrap_or(section.len())];
    section
        .lines()
        .filter_map(|l| l.strip_prefix("    "))
        .filter(|l| l.starts_with(&format!("{applet} ")) || *l == applet)
        .map(String::from)
        .collect()
}

/// Whether this kernel lacks what the example says it needs: function
/// tracing (left out everywhere: most kernels this runs on refuse it), a
/// snapshot buffer.
fn lacks_what_it_needs(line: &str) -> bool {
    line.contains("# needs function tracing")
        || line.contains("# needs CONFIG_TRACER_SNAPSHOT") && !Path::new("/sys/kernel/tracing/snapshot").exists()
}

fn live(line: &str) -> bool {
    !line.starts_with("ftcat ") && line != "ftcat" || line.contains("--live")
}

/// Whether the live examples can run here; if not, why.
fn live_skip_reason() -> Option<String> {
    if std::env::var_os("FTBOX_NO_LIVE").is_some_and(|v| v == "1") {
        return Some("FTBOX_NO_LIVE=1".into());
    }
    if !rustix::process::geteuid().is_root() {
        return Some("not root".into());
    }
    if !Path::new("/sys/kernel/tracing/trace").exists() {
        return Some("no tracefs at /sys/kernel/tracing".into());
    }
    None
}

/// A work directory: `bin/` with the applets (wrappers for the live ones)
/// and `work/` with trace.dat.
struct Setup {
    dir: PathBuf,
    instance: String,
}

impl Setup {
    fn new(tag: &str) -> Setup {
        let dir = std::env::temp_dir().join(format!("ftbox-readme-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("bin")).unwrap();
        std::fs::create_dir_all(dir.join("work")).unwrap();
        let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/foreign/i686.dat");
        std::fs::copy(&fixture, dir.join("work/trace.dat")).unwrap_or_else(|e| panic!("{}: {e}", fixture.display()));
        let instance = format!("ftbox-readme-{}", std::process::id());
        let wrappers = [
            ("ftcat", r#"case " $* " in *" --live "*) exec "$FTBOX" ftcat "$@" -B "$INST";; esac; exec "$FTBOX" ftcat "$@""#),
            ("ftctl", r#"case "$1" in instance) exec "$FTBOX" ftctl "$@";; esac; exec "$FTBOX" ftctl -B "$INST" "$@""#),
            (
                "ftrec",
                r#"case "$1" in extract) exec "$FTBOX" ftrec "$@" -B "$INST";; esac
d=; case " $* " in *" -d "*|*" -- "*) ;; *) d="-d 1";; esac
case " $* " in *" --private "*) exec "$FTBOX" ftrec $d "$@";; esac
exec "$FTBOX" ftrec -B "$INST" $d "$@""#,
            ),
        ];
        for (name, body) in wrappers {
            let p = dir.join("bin").join(name);
            std::fs::write(&p, format!("#!/bin/sh\n{body}\n")).unwrap();
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
        }
        Setup { dir, instance }
    }

    /// Run one example line; exit status and stderr.
    fn run(&self, line: &str) -> (i32, String) {
        let path = format!("{}:{}", self.dir.join("bin").display(), std::env::var("PATH").unwrap_or_default());
        // `--compression zstd` is in `make full`'s binary, not the default
        // one; this test build has it (make test builds with zstd-write).
        let bin = if line.contains("--compression zstd") { PathBuf::from(env!("CARGO_BIN_EXE_ftbox")) } else { ftbox() };
        let o = Command::new("sh")
            .arg("-c")
            .arg(line)
            .current_dir(self.dir.join("work"))
            .env("PATH", path)
            .env("FTBOX", bin)
            .env("INST", &self.instance)
            .stdin(std::process::Stdio::null())
            .output()
            .unwrap();
        (o.status.code().unwrap_or(-1), String::from_utf8_lossy(&o.stderr).into())
    }
}

impl Drop for Setup {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

#[test]
fn the_examples_are_found() {
    let r = readme();
    for (applet, at_least) in [("ftctl", 20), ("ftrec", 4), ("ftcat", 7)] {
        let ex = examples(&r, applet);
        assert!(ex.len() >= at_least, "{applet}: {ex:?}");
        // Synopses (placeholders in capitals, [optional] parts) are prose,
        // not examples: each example runs as written.
        for l in &ex {
            let code = l.split(" #").next().unwrap();
            assert!(!code.contains('[') && !code.contains("INSTANCE") && !code.contains("FILE"), "not runnable as written: {l}");
        }
    }
}

/// ftcat on files: no tracefs needed.
#[test]
fn ftcat_examples_run() {
    let s = Setup::new("ftcat");
    for line in examples(&readme(), "ftcat").iter().filter(|l| !live(l)) {
        let (c, err) = s.run(line);
        assert_eq!(c, 0, "README example failed: {line}\n{err}");
    }
}

/// ftctl, ftrec and ftcat --live in a private instance.
#[test]
fn live_examples_run() {
    if let Some(why) = live_skip_reason() {
        println!("skipped: live README examples: {why}");
        return;
    }
    let s = Setup::new("live");
    let ftctl = |args: &[&str]| Command::new(ftbox()).arg("ftctl").args(args).output().unwrap();
    let o = ftctl(&["instance", "add", &s.instance]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let r = readme();
    let mut failed = Vec::new();
    for applet in ["ftctl", "ftrec", "ftcat"] {
        for line in examples(&r, applet).iter().filter(|l| live(l) && !lacks_what_it_needs(l)) {
            let (c, err) = s.run(line);
            if c != 0 {
                failed.push(format!("{line}\n  exit {c}: {err}"));
            }
        }
    }
    let _ = ftctl(&["-B", &s.instance, "reset"]);
    let _ = ftctl(&["instance", "rm", &s.instance]);
    assert!(failed.is_empty(), "README examples failed:\n{}", failed.join("\n"));
}

//! ftctl command-line handling through an argv[0] symlink made by
//! `ftbox --install -s`: usage, exit codes, and names refused before tracefs
//! is touched. None of these need root.

use std::path::PathBuf;
use std::process::Command;
use std::sync::OnceLock;

fn ftbox() -> PathBuf {
    std::env::var_os("FTBOX_BIN").map(PathBuf::from).unwrap_or_else(|| PathBuf::from(env!("CARGO_BIN_EXE_ftbox")))
}

/// The ftctl link, installed once per test process.
fn ftctl() -> &'static PathBuf {
    static LINK: OnceLock<PathBuf> = OnceLock::new();
    LINK.get_or_init(|| {
        let d = std::env::temp_dir().join(format!("ftbox-ftctl-cli-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        let o = Command::new(ftbox()).arg("--install").arg("-s").arg(&d).output().unwrap();
        assert!(o.status.success(), "install: {}", String::from_utf8_lossy(&o.stderr));
        d.join("ftctl")
    })
}

fn run(args: &[&str]) -> (i32, String, String) {
    let o = Command::new(ftctl()).args(args).output().unwrap();
    (o.status.code().unwrap_or(-1), String::from_utf8_lossy(&o.stdout).into(), String::from_utf8_lossy(&o.stderr).into())
}

#[test]
fn help_is_usage_on_stdout() {
    for h in ["--help", "-h"] {
        let (c, out, err) = run(&[h]);
        assert_eq!((c, err.as_str()), (0, ""));
        assert!(out.starts_with("Usage: ftctl"), "{out}");
        // Every verb of the table is documented.
        for v in [
            "status", "reset", "on", "off", "tracer", "list", "format", "enable", "disable", "filter", "trigger", "funcs",
            "pid", "buffer", "subbuf", "clock", "option", "mark", "show", "snapshot", "instance", "mount",
        ] {
            assert!(out.contains(&format!("\n  {v}")) || out.contains(&format!("| {v}")), "usage lacks {v}");
        }
    }
    // Help wins wherever it appears.
    let (c, out, _) = run(&["status", "--help"]);
    assert_eq!(c, 0);
    assert!(out.starts_with("Usage: ftctl"));
}

#[test]
fn usage_errors_exit_2() {
    let cases: &[(&[&str], &str)] = &[
        (&[], "no command given"),
        (&["frobnicate"], "unknown command 'frobnicate'"),
        (&["status", "--bogus"], "--bogus"),
        (&["on", "--clear"], "on: option --clear does not apply"),
        (&["enable"], "enable: missing argument"),
        (&["tracer", "a", "b"], "tracer: unexpected argument 'b'"),
        (&["instance", "add"], "instance: missing argument"),
        (&["show", "--cpu"], "--cpu"),
        (&["-B"], "-B"),
    ];
    for (args, want) in cases {
        let (c, out, err) = run(args);
        assert_eq!(c, 2, "{args:?}: {err}");
        assert_eq!(out, "", "{args:?}");
        assert!(err.starts_with("ftctl: "), "{args:?}: {err}");
        assert!(err.contains(want), "{args:?}: {err}");
        assert!(err.contains("Usage: ftctl") && err.contains("--help"), "{args:?}: {err}");
    }
}

#[test]
fn bad_instance_names_refused_before_tracefs() {
    for name in ["..", "../x", "a/b", "x..y", "a\nb", "", "."] {
        let (c, _, err) = run(&["-B", name, "status"]);
        assert_eq!(c, 1, "{name:?}: {err}");
        assert!(err.contains("invalid instance name"), "{name:?}: {err}");
        let (c, _, err) = run(&["instance", "add", name]);
        assert_eq!(c, 1, "{name:?}: {err}");
        assert!(err.contains("invalid instance name"), "{name:?}: {err}");
    }
}

//! The `long` of a recording is the traced kernel's, never the decoder's or
//! the recorder's. Older 32-bit (i686) ftrec on a 64-bit kernel wrote its
//! own `sizeof(long)` = 4 into the trace.dat header; ftcat then read 8-byte
//! kernel longs (stack entries, `%lx` arguments) as 4-byte ones. The file's
//! header_page says the truth (its `commit` field is a kernel `long`), and
//! that is what ftcat must use, as libtraceevent does.

use std::path::{Path, PathBuf};
use std::process::Command;

fn ftbox() -> PathBuf {
    std::env::var_os("FTBOX_BIN").map(PathBuf::from).unwrap_or_else(|| PathBuf::from(env!("CARGO_BIN_EXE_ftbox")))
}

fn ftcat(dir: &Path, file: &Path) -> Vec<u8> {
    let link = dir.join("ftcat");
    if !link.exists() {
        std::os::unix::fs::symlink(ftbox(), &link).unwrap();
    }
    let o = Command::new(&link).arg(file).output().unwrap();
    assert_eq!(o.status.code(), Some(0), "ftcat {}: {}", file.display(), String::from_utf8_lossy(&o.stderr));
    o.stdout
}

#[test]
fn header_long_size_of_a_32bit_recorder_is_ignored() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/vm-6.12/x-kstack.extract.dat");
    let data = std::fs::read(&src).unwrap();
    // "\x17\x08\x44tracing" "6\0"|"7\0" endian:u8 long_size:u8
    assert_eq!(&data[3..10], b"tracing");
    assert_eq!(data[13], 8, "the fixture comes from a 64-bit kernel");
    let dir = std::env::temp_dir().join(format!("ftbox-long-size-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let mut patched = data.clone();
    patched[13] = 4;
    let p = dir.join("long4.dat");
    std::fs::write(&p, &patched).unwrap();
    let want = ftcat(&dir, &src);
    let got = ftcat(&dir, &p);
    let _ = std::fs::remove_dir_all(&dir);
    // The stack entries are kernel longs: 8 bytes whatever the header says.
    assert!(want.windows(3).any(|w| w == b"=> "), "the fixture has kernel stacks");
    assert!(got == want, "ftcat used the header's long size:\n{}", String::from_utf8_lossy(&got));
}

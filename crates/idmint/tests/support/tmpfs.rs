//! A small tmpfs of a test's own, for the full-disk faults of the embedded store: mounted on a
//! fresh folder, filled with one file (freed by removing it), unmounted when dropped. Shared
//! by the failure suite and the store crate's tests (included with `#[path]`).
//!
//! Mounting needs root, as CI runs; anyone else gets a panic saying so, never a silent skip.
// Each test binary that includes this file uses part of it.
#![allow(dead_code)]

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;

pub struct Tmpfs {
    dir: PathBuf,
}

impl Tmpfs {
    /// Mounts a tmpfs of `size` (as `mount -o size=`, e.g. `2m`) on a fresh folder under
    /// `/tmp` named after `name`.
    pub fn mount(name: &str, size: &str) -> Self {
        crate::root::require_root(&format!("mounting a {size} tmpfs for {name}"));
        let dir = PathBuf::from("/tmp").join(format!("idmint-{name}-{}", std::process::id()));
        // A mount left by an earlier run that was killed.
        let _ = Command::new("umount")
            .arg("-l")
            .arg(&dir)
            .stderr(std::process::Stdio::null())
            .status();
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let status = Command::new("mount")
            .args([
                "-t",
                "tmpfs",
                "-o",
                &format!("size={size},mode=0755"),
                "tmpfs",
            ])
            .arg(&dir)
            .status()
            .expect("mount");
        assert!(
            status.success(),
            "mount -t tmpfs on {} failed",
            dir.display()
        );
        Self { dir }
    }

    /// The mounted folder.
    pub fn path(&self) -> &Path {
        &self.dir
    }

    /// Fills the disk with one file, 4 KiB at a time until the file system refuses
    /// (`ENOSPC`); returns the file, whose removal frees the space.
    pub fn fill(&self) -> PathBuf {
        let path = self.dir.join("filler");
        let mut file = std::fs::File::create(&path).unwrap();
        let block = [0u8; 4096];
        loop {
            match file.write(&block) {
                Ok(0) => break,
                Ok(_) => {}
                Err(error) => {
                    assert_eq!(
                        error.raw_os_error(),
                        Some(28),
                        "filling {}: {error}",
                        self.dir.display()
                    );
                    break;
                }
            }
        }
        path
    }
}

impl Drop for Tmpfs {
    /// Lazily, so a process that still holds a file there cannot keep the mount behind.
    fn drop(&mut self) {
        let _ = Command::new("umount").arg("-l").arg(&self.dir).status();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

//! `--permutation-key-file`: the secret key of the namespace's ID permutation
//! (`idmint_core::permutation`), read once at start.
//!
//! The key is what keeps the public IDs' order and volume hidden, so it is treated like the
//! admin token: read from a file (a flag would show in the process list), never quoted in an
//! error, never logged (only its fingerprint), and a file others may read is warned about.

use std::io::Read;
use std::path::Path;

use idmint_core::Permutation;

use crate::error::ServerError;

/// The most a key file is read: a key is 32 hexadecimal digits and a line end; anything far
/// longer is the wrong file.
const MAX_FILE_BYTES: u64 = 4_096;

/// The permutation of namespace `namespace` under the key in the file at `path` (derived from
/// the key, so a key reused for another namespace gives other values there). The error names
/// the setting and the file, never the file's text.
pub fn load(path: &Path, namespace: &str) -> Result<Permutation, ServerError> {
    Ok(read_key(path)?.for_namespace(namespace))
}

/// The key in the file at `path`.
fn read_key(path: &Path) -> Result<Permutation, ServerError> {
    let refused = |reason: String| ServerError::Config {
        setting: "permutation-key-file".into(),
        reason: format!("{}: {reason}", path.display()),
    };
    let file = std::fs::File::open(path).map_err(|e| refused(format!("cannot read: {e}")))?;
    warn_if_shared(path, &file);
    let mut text = String::new();
    file.take(MAX_FILE_BYTES + 1)
        .read_to_string(&mut text)
        .map_err(|e| refused(format!("cannot read: {e}")))?;
    if text.len() as u64 > MAX_FILE_BYTES {
        return Err(refused(format!(
            "longer than {MAX_FILE_BYTES} bytes: a key file holds 32 hexadecimal digits"
        )));
    }
    Permutation::from_hex(&text).map_err(|e| refused(e.to_string()))
}

/// Logs a warning when users other than the owner may read the key file.
#[cfg(unix)]
fn warn_if_shared(path: &Path, file: &std::fs::File) {
    use std::os::unix::fs::PermissionsExt;
    if let Ok(metadata) = file.metadata() {
        let mode = metadata.permissions().mode();
        if mode & 0o077 != 0 {
            tracing::warn!(
                file = %path.display(),
                mode = format!("{:o}", mode & 0o777),
                "the permutation key file may be read by other users (chmod 600 it): whoever \
                 reads the key can tell the order and volume of the IDs"
            );
        }
    }
}

#[cfg(not(unix))]
fn warn_if_shared(_: &Path, _: &std::fs::File) {}

#[cfg(test)]
mod tests {
    use super::*;

    fn written(name: &str, text: &str) -> std::path::PathBuf {
        let path = std::env::temp_dir().join(format!("idmint-key-{}-{name}", std::process::id()));
        if let Err(e) = std::fs::write(&path, text) {
            panic!("writing {}: {e}", path.display());
        }
        path
    }

    #[test]
    fn a_key_file_is_read_and_a_bad_one_is_refused_without_its_text() {
        let good = written("good", "000102030405060708090a0b0c0d0e0f\n");
        let (Ok(shop), Ok(other)) = (load(&good, "shop"), load(&good, "other")) else {
            panic!("a good key file loads");
        };
        assert_ne!(shop.fingerprint(), other.fingerprint());
        let secret = "s3cret-not-a-key-at-all-000000000";
        for (name, text) in [("bad", secret), ("long", &"0".repeat(5_000)[..])] {
            let path = written(name, text);
            let Err(error) = load(&path, "shop") else {
                panic!("{name} must be refused");
            };
            let message = error.to_string();
            assert!(message.contains("permutation-key-file"), "{message}");
            assert!(!message.contains(secret), "{message}");
            let _ = std::fs::remove_file(path);
        }
        let missing = load(Path::new("/nonexistent/idmint.key"), "shop")
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(missing.contains("cannot read"), "{missing}");
        let _ = std::fs::remove_file(good);
    }
}

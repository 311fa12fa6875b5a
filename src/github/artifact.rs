//! Safe extraction of an evidence artifact zip.

use std::fs;
use std::io::{Read, Write};
use std::path::{Component, Path, PathBuf};

/// Caps applied while downloading and extracting an artifact.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ArtifactLimits {
    /// Bytes of zip downloaded.
    pub max_download_bytes: u64,
    /// Bytes actually written while inflating, over all entries.
    pub max_inflated_bytes: u64,
    /// Entries in the archive (files and directories).
    pub max_entries: usize,
    /// Inflated / compressed size of one entry, checked on the bytes written
    /// (entries smaller than `ratio_grace_bytes` are exempt).
    pub max_ratio: u64,
    pub ratio_grace_bytes: u64,
}

impl Default for ArtifactLimits {
    fn default() -> Self {
        ArtifactLimits {
            max_download_bytes: 256 << 20,
            max_inflated_bytes: 1 << 30,
            max_entries: 10_000,
            max_ratio: 200,
            ratio_grace_bytes: 1 << 20,
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum ArtifactError {
    #[error("the artifact is larger than the download cap of {limit} bytes")]
    DownloadTooLarge { limit: u64 },
    #[error("zip entry {0:?} has an unsafe name (absolute, `..`, drive letter or NUL)")]
    UnsafePath(String),
    #[error("zip entry {0:?} is a symlink")]
    Symlink(String),
    #[error("zip entry {0:?} appears twice")]
    Duplicate(String),
    #[error("the artifact has more than {limit} entries")]
    TooManyEntries { limit: usize },
    #[error("the artifact inflates to more than {limit} bytes")]
    InflatedTooLarge { limit: u64 },
    #[error("zip entry {name:?} inflates more than {limit}x (a zip bomb?)")]
    RatioExceeded { name: String, limit: u64 },
    #[error("the artifact is not a valid zip: {0}")]
    Zip(#[from] zip::result::ZipError),
    #[error("i/o while extracting the artifact: {0}")]
    Io(#[from] std::io::Error),
}

/// The relative path an entry name may be written to, or `None` if it is unsafe.
fn safe_relative_path(name: &str) -> Option<PathBuf> {
    if name.is_empty() || name.contains('\0') || name.starts_with('/') || name.starts_with('\\') {
        return None;
    }
    let bytes = name.as_bytes();
    if bytes.len() >= 2 && bytes[1] == b':' {
        return None; // C:foo
    }
    let mut out = PathBuf::new();
    for part in name.split(['/', '\\']) {
        match part {
            "" | "." => continue,
            ".." => return None,
            p => out.push(p),
        }
    }
    // Belt and braces: what remains must be plain components.
    if out.as_os_str().is_empty() || !out.components().all(|c| matches!(c, Component::Normal(_))) {
        return None;
    }
    Some(out)
}

/// Extract `zip_path` into `dest` (created; must be empty if it exists). Rejects unsafe names and
/// symlinks and enforces `limits` on the bytes actually inflated, not on the sizes the archive
/// declares. On error, `dest` may hold a partial extraction; the caller removes it.
pub fn extract_zip(zip_path: &Path, dest: &Path, limits: &ArtifactLimits) -> Result<u64, ArtifactError> {
    fs::create_dir_all(dest)?;
    if fs::read_dir(dest)?.next().is_some() {
        return Err(std::io::Error::new(std::io::ErrorKind::AlreadyExists, "extraction directory is not empty").into());
    }
    let mut archive = zip::ZipArchive::new(fs::File::open(zip_path)?)?;
    if archive.len() > limits.max_entries {
        return Err(ArtifactError::TooManyEntries {
            limit: limits.max_entries,
        });
    }
    let mut total: u64 = 0;
    let mut buf = vec![0u8; 64 * 1024];
    for i in 0..archive.len() {
        let mut entry = archive.by_index(i)?;
        let name = entry.name().to_owned();
        let rel = safe_relative_path(&name).ok_or_else(|| ArtifactError::UnsafePath(name.clone()))?;
        if entry.is_symlink() {
            return Err(ArtifactError::Symlink(name));
        }
        let target = dest.join(&rel);
        if entry.is_dir() {
            fs::create_dir_all(&target)?;
            continue;
        }
        if let Some(parent) = target.parent() {
            fs::create_dir_all(parent)?;
        }
        let mut out = match fs::OpenOptions::new().write(true).create_new(true).open(&target) {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => return Err(ArtifactError::Duplicate(name)),
            Err(e) => return Err(e.into()),
        };
        let compressed = entry.compressed_size().max(1);
        let mut written: u64 = 0;
        loop {
            let n = entry.read(&mut buf)?;
            if n == 0 {
                break;
            }
            written += n as u64;
            total += n as u64;
            if total > limits.max_inflated_bytes {
                return Err(ArtifactError::InflatedTooLarge {
                    limit: limits.max_inflated_bytes,
                });
            }
            if written > limits.ratio_grace_bytes && written / compressed > limits.max_ratio {
                return Err(ArtifactError::RatioExceeded {
                    name,
                    limit: limits.max_ratio,
                });
            }
            out.write_all(&buf[..n])?;
        }
    }
    Ok(total)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Cursor;
    use zip::write::SimpleFileOptions;

    fn build(entries: &[(&str, &[u8])], symlink: Option<(&str, &str)>) -> tempfile::NamedTempFile {
        let mut w = zip::ZipWriter::new(Cursor::new(Vec::new()));
        let opts = SimpleFileOptions::default().compression_method(zip::CompressionMethod::Deflated);
        for (name, data) in entries {
            w.start_file(*name, opts).unwrap();
            w.write_all(data).unwrap();
        }
        if let Some((name, target)) = symlink {
            w.add_symlink(name, target, opts).unwrap();
        }
        let bytes = w.finish().unwrap().into_inner();
        let mut f = tempfile::NamedTempFile::new().unwrap();
        f.write_all(&bytes).unwrap();
        f
    }

    fn extract(
        zip: &tempfile::NamedTempFile,
        limits: ArtifactLimits,
    ) -> (tempfile::TempDir, Result<u64, ArtifactError>) {
        let dir = tempfile::tempdir().unwrap();
        let r = extract_zip(zip.path(), &dir.path().join("out"), &limits);
        (dir, r)
    }

    #[test]
    fn extracts_nested_files() {
        let z = build(&[("a.json", b"{}"), ("sub/dir/b.txt", b"hello")], None);
        let (dir, r) = extract(&z, ArtifactLimits::default());
        assert_eq!(r.unwrap(), 7);
        assert_eq!(fs::read(dir.path().join("out/sub/dir/b.txt")).unwrap(), b"hello");
    }

    #[test]
    fn rejects_zip_slip_absolute_and_symlink() {
        for name in [
            "../evil.txt",
            "a/../../evil.txt",
            "/etc/evil",
            "C:\\evil",
            "a\\..\\..\\evil",
        ] {
            let z = build(&[("ok.txt", b"x"), (name, b"pwned")], None);
            let (dir, r) = extract(&z, ArtifactLimits::default());
            assert!(matches!(r, Err(ArtifactError::UnsafePath(_))), "{name}: {r:?}");
            assert!(!dir.path().join("evil.txt").exists());
        }
        let z = build(&[("ok.txt", b"x")], Some(("link", "/etc/passwd")));
        let (_dir, r) = extract(&z, ArtifactLimits::default());
        assert!(matches!(r, Err(ArtifactError::Symlink(_))), "{r:?}");
    }

    #[test]
    fn rejects_bombs_and_too_many_entries() {
        let zeros = vec![0u8; 8 << 20];
        let z = build(&[("bomb.bin", &zeros)], None);
        let (_d, r) = extract(&z, ArtifactLimits::default());
        assert!(matches!(r, Err(ArtifactError::RatioExceeded { .. })), "{r:?}");
        let limits = ArtifactLimits {
            max_inflated_bytes: 1 << 20,
            max_ratio: u64::MAX,
            ..Default::default()
        };
        let (_d, r) = extract(&z, limits);
        assert!(matches!(r, Err(ArtifactError::InflatedTooLarge { .. })), "{r:?}");
        let z = build(&[("a", b"1"), ("b", b"2"), ("c", b"3")], None);
        let (_d, r) = extract(
            &z,
            ArtifactLimits {
                max_entries: 2,
                ..Default::default()
            },
        );
        assert!(matches!(r, Err(ArtifactError::TooManyEntries { limit: 2 })), "{r:?}");
    }
}

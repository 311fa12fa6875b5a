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
    /// Bytes of the central directory (the list of entries), which the zip reader
    /// holds in memory: checked from the end record before the directory is parsed.
    pub max_directory_bytes: u64,
}

impl Default for ArtifactLimits {
    fn default() -> Self {
        ArtifactLimits {
            max_download_bytes: 256 << 20,
            max_inflated_bytes: 1 << 30,
            max_entries: 10_000,
            max_ratio: 200,
            ratio_grace_bytes: 1 << 20,
            // 10,000 entries with paths of about 1.6 KB each.
            max_directory_bytes: 16 << 20,
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
    #[error("the artifact's list of entries is {bytes} bytes, more than {limit}")]
    DirectoryTooLarge { bytes: u64, limit: u64 },
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
    let mut file = fs::File::open(zip_path)?;
    check_directory_size(&mut file, limits)?;
    let mut archive = zip::ZipArchive::new(file)?;
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

/// The entry count and size of the central directory, read from the end-of-central-
/// directory record (and its zip64 form) before the directory itself is parsed: the
/// zip reader holds the whole directory in memory, and a 104 MB zip listing 2 million
/// entries once took 1.16 GB before its length was refused. A file without an end
/// record is left for the zip reader to reject.
fn check_directory_size(file: &mut fs::File, limits: &ArtifactLimits) -> Result<(), ArtifactError> {
    use std::io::{Seek, SeekFrom};
    const EOCD: [u8; 4] = [0x50, 0x4b, 0x05, 0x06];
    const LOCATOR: [u8; 4] = [0x50, 0x4b, 0x06, 0x07];
    const EOCD64: [u8; 4] = [0x50, 0x4b, 0x06, 0x06];
    let len = file.seek(SeekFrom::End(0))?;
    // The end record is 22 bytes and a comment of at most 65,535.
    let tail_len = len.min(22 + 0xffff);
    let mut tail = vec![0u8; tail_len as usize];
    file.seek(SeekFrom::Start(len - tail_len))?;
    file.read_exact(&mut tail)?;
    let u16_at = |b: &[u8], i: usize| u64::from(u16::from_le_bytes([b[i], b[i + 1]]));
    let u32_at = |b: &[u8], i: usize| u64::from(u32::from_le_bytes([b[i], b[i + 1], b[i + 2], b[i + 3]]));
    let u64_at = |b: &[u8], i: usize| {
        let mut a = [0u8; 8];
        a.copy_from_slice(&b[i..i + 8]);
        u64::from_le_bytes(a)
    };
    // The last record whose comment length reaches exactly the end of the file.
    let Some(at) = (0..tail.len().saturating_sub(21))
        .rev()
        .find(|&i| tail[i..i + 4] == EOCD && i + 22 + u16_at(&tail, i + 20) as usize == tail.len())
    else {
        return Ok(());
    };
    let mut entries = u16_at(&tail, at + 10);
    let mut size = u32_at(&tail, at + 12);
    if entries == 0xffff || size == 0xffff_ffff {
        // Zip64: a 20-byte locator right before the end record points at the zip64 end record.
        let end_at = len - tail_len + at as u64;
        if end_at >= 20 {
            let mut locator = [0u8; 20];
            file.seek(SeekFrom::Start(end_at - 20))?;
            file.read_exact(&mut locator)?;
            if locator[..4] == LOCATOR {
                let record_at = u64_at(&locator, 8);
                let mut record = [0u8; 56];
                if record_at.checked_add(56).is_some_and(|e| e <= len) {
                    file.seek(SeekFrom::Start(record_at))?;
                    file.read_exact(&mut record)?;
                    if record[..4] == EOCD64 {
                        entries = u64_at(&record, 32);
                        size = u64_at(&record, 40);
                    }
                }
            }
        }
    }
    file.seek(SeekFrom::Start(0))?;
    if entries > limits.max_entries as u64 {
        return Err(ArtifactError::TooManyEntries {
            limit: limits.max_entries,
        });
    }
    if size > limits.max_directory_bytes {
        return Err(ArtifactError::DirectoryTooLarge {
            bytes: size,
            limit: limits.max_directory_bytes,
        });
    }
    Ok(())
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

    /// A file that is only an end-of-central-directory record (and, for zip64, its
    /// locator and record) declaring `entries` entries in a directory of `size` bytes:
    /// what a huge directory's end looks like, without the directory.
    fn end_records(entries: u64, size: u64, zip64: bool) -> tempfile::NamedTempFile {
        let mut b = Vec::new();
        if zip64 {
            let record_at = b.len() as u64;
            b.extend_from_slice(&[0x50, 0x4b, 0x06, 0x06]);
            b.extend_from_slice(&44u64.to_le_bytes()); // size of the rest of the record
            b.extend_from_slice(&[45, 0, 45, 0]); // versions
            b.extend_from_slice(&[0u8; 8]); // disk numbers
            b.extend_from_slice(&entries.to_le_bytes()); // entries on this disk
            b.extend_from_slice(&entries.to_le_bytes()); // entries in all
            b.extend_from_slice(&size.to_le_bytes());
            b.extend_from_slice(&0u64.to_le_bytes()); // directory offset
            b.extend_from_slice(&[0x50, 0x4b, 0x06, 0x07]);
            b.extend_from_slice(&0u32.to_le_bytes());
            b.extend_from_slice(&record_at.to_le_bytes());
            b.extend_from_slice(&1u32.to_le_bytes());
        }
        let (e16, s32) = if zip64 {
            (0xffffu16, 0xffff_ffffu32)
        } else {
            (entries as u16, size as u32)
        };
        b.extend_from_slice(&[0x50, 0x4b, 0x05, 0x06, 0, 0, 0, 0]);
        b.extend_from_slice(&e16.to_le_bytes());
        b.extend_from_slice(&e16.to_le_bytes());
        b.extend_from_slice(&s32.to_le_bytes());
        b.extend_from_slice(&0u32.to_le_bytes()); // directory offset
        b.extend_from_slice(&3u16.to_le_bytes()); // comment length
        b.extend_from_slice(b"hi!");
        let mut f = tempfile::NamedTempFile::new().unwrap();
        f.write_all(&b).unwrap();
        f
    }

    #[test]
    fn a_huge_directory_is_refused_from_its_end_record_before_it_is_read() {
        // 60,000 entries (the zip reader would have to list them all to count them).
        let z = end_records(60_000, 60_000 * 46, false);
        let (_d, r) = extract(&z, ArtifactLimits::default());
        assert!(
            matches!(r, Err(ArtifactError::TooManyEntries { limit: 10_000 })),
            "{r:?}"
        );
        // Two million entries, said in the zip64 record.
        let z = end_records(2_000_000, 2_000_000 * 46, true);
        let (_d, r) = extract(&z, ArtifactLimits::default());
        assert!(
            matches!(r, Err(ArtifactError::TooManyEntries { limit: 10_000 })),
            "{r:?}"
        );
        // Few entries with enormous names.
        let z = end_records(100, 100 << 20, true);
        let (_d, r) = extract(&z, ArtifactLimits::default());
        assert!(
            matches!(r, Err(ArtifactError::DirectoryTooLarge { bytes, limit: 16_777_216 }) if bytes == 100 << 20),
            "{r:?}"
        );
        // A real zip passes the check and extracts.
        let z = build(&[("a.json", b"{}")], None);
        let (dir, r) = extract(&z, ArtifactLimits::default());
        assert_eq!(r.unwrap(), 2);
        assert!(dir.path().join("out/a.json").is_file());
    }
}

//! A file's stat as proof that its bytes did not change (git's index rule): length,
//! modification and change times, inode. A stat taken when the bytes were read proves them
//! later only if the file was not modified within [`RACY_NS`] of that read: a second write in
//! the same clock tick could leave every field as it was ("racy" files are read again).

use serde::{Deserialize, Serialize};

/// A file modified less than this before it was read is not trusted by its stat.
pub const RACY_NS: i128 = 1_000_000_000;

/// What identifies a regular file's bytes without reading them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileStat {
    pub len: u64,
    pub mtime_ns: i128,
    pub ctime_ns: i128,
    pub ino: u64,
}

impl FileStat {
    /// The stat of `m`.
    pub fn of(m: &std::fs::Metadata) -> Self {
        use std::os::unix::fs::MetadataExt;
        FileStat {
            len: m.len(),
            mtime_ns: i128::from(m.mtime()) * 1_000_000_000 + i128::from(m.mtime_nsec()),
            ctime_ns: i128::from(m.ctime()) * 1_000_000_000 + i128::from(m.ctime_nsec()),
            ino: m.ino(),
        }
    }

    /// The stat of the regular file at `path` (not followed if a symbolic link: a link is not
    /// a file whose bytes this proves); `None` when it is missing or not a regular file.
    pub fn of_path(path: &std::path::Path) -> Option<Self> {
        std::fs::symlink_metadata(path).ok().filter(std::fs::Metadata::is_file).map(|m| FileStat::of(&m))
    }

    /// Whether this stat, taken just before the bytes were read at `read_at_ns`, proves them
    /// from now on: the file was last modified (content or inode) at least [`RACY_NS`] before.
    pub fn settled_at(&self, read_at_ns: i128) -> bool {
        self.mtime_ns.saturating_add(RACY_NS) <= read_at_ns && self.ctime_ns.saturating_add(RACY_NS) <= read_at_ns
    }
}

/// The bytes of the regular file at `path` (a symbolic link is not followed) and its stat,
/// taken on the open file before reading it. Errors: `InvalidInput` for a file that is not a
/// regular one, the open's (a link: `ELOOP`) or the read's otherwise.
///
/// The read does not update the file's access time (`O_NOATIME`, allowed on the files this
/// process owns, which its output files are; without it where refused): with `relatime`, a
/// full check reading 100,000 files just written, or not read for a day, dirtied as many
/// inodes, which the next publish's `syncfs` then wrote out.
pub fn read_file(path: &std::path::Path) -> std::io::Result<(FileStat, Vec<u8>)> {
    use std::io::Read;
    let mut file = open_untouched(path, false)?;
    let meta = file.metadata()?;
    if !meta.is_file() {
        return Err(std::io::Error::new(std::io::ErrorKind::InvalidInput, "not a regular file"));
    }
    let mut bytes = Vec::with_capacity(usize::try_from(meta.len()).unwrap_or(0).saturating_add(1));
    file.read_to_end(&mut bytes)?;
    Ok((FileStat::of(&meta), bytes))
}

/// Opens `path` for reading without updating its access time (`O_NOATIME`, refused on
/// another user's file: then opened without it) and, unless `follow`, without following a
/// symbolic link (`ELOOP`).
pub fn open_untouched(path: &std::path::Path, follow: bool) -> std::io::Result<std::fs::File> {
    use std::os::unix::fs::OpenOptionsExt;
    let nofollow = if follow { 0 } else { rustix::fs::OFlags::NOFOLLOW.bits() as i32 };
    let noatime = rustix::fs::OFlags::NOATIME.bits() as i32;
    let open = |flags: i32| std::fs::OpenOptions::new().read(true).custom_flags(flags).open(path);
    match open(nofollow | noatime) {
        Err(e) if e.raw_os_error() == Some(rustix::io::Errno::PERM.raw_os_error()) => open(nofollow),
        opened => opened,
    }
}

/// What an entry of a directory is (a symbolic link is not followed).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EntryKind {
    File,
    Dir,
    Other,
}

/// The entries of the directory `dir` (names that are not UTF-8 left out), read without
/// updating its access time (as [`open_untouched`]): a full check lists every directory of the
/// output, which would otherwise dirty each one's inode for the next `syncfs`.
pub fn list_dir_untouched(dir: &std::path::Path) -> std::io::Result<Vec<(String, EntryKind)>> {
    use rustix::fs::{AtFlags, Dir, FileType, Mode, OFlags};
    let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC;
    let fd = match rustix::fs::open(dir, flags | OFlags::NOATIME, Mode::empty()) {
        Err(rustix::io::Errno::PERM) => rustix::fs::open(dir, flags, Mode::empty())?,
        opened => opened?,
    };
    let kind_of = |t: FileType| match t {
        FileType::RegularFile => EntryKind::File,
        FileType::Directory => EntryKind::Dir,
        _ => EntryKind::Other,
    };
    let mut out = Vec::new();
    for entry in Dir::read_from(&fd)? {
        let entry = entry?;
        let Ok(name) = entry.file_name().to_str() else { continue };
        if name == "." || name == ".." {
            continue;
        }
        // A file system that does not say the entry's type in the listing: its stat.
        let kind = match entry.file_type() {
            FileType::Unknown => kind_of(FileType::from_raw_mode(
                rustix::fs::statat(&fd, entry.file_name(), AtFlags::SYMLINK_NOFOLLOW)?.st_mode,
            )),
            t => kind_of(t),
        };
        out.push((name.to_string(), kind));
    }
    Ok(out)
}

/// The wall clock in nanoseconds since the epoch (0 before it), the scale of [`FileStat`]'s
/// times.
pub fn wall_ns() -> i128 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos() as i128)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_just_written_is_racy_and_an_edit_changes_its_stat() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("f.yaml");
        std::fs::write(&path, "a: 1\n").expect("write");
        let read_at = wall_ns();
        let stat = FileStat::of_path(&path).expect("stat");
        assert!(!stat.settled_at(read_at), "modified just now");
        assert!(stat.settled_at(read_at + 2 * RACY_NS));
        std::fs::write(&path, "a: 22\n").expect("write");
        assert_ne!(FileStat::of_path(&path), Some(stat));
        // A symbolic link and a directory are not files whose bytes a stat proves.
        std::os::unix::fs::symlink(&path, dir.path().join("link.yaml")).expect("symlink");
        assert_eq!(FileStat::of_path(&dir.path().join("link.yaml")), None);
        assert_eq!(FileStat::of_path(dir.path()), None);
        assert_eq!(FileStat::of_path(&dir.path().join("missing.yaml")), None);
        // Read with its stat: the same stat, the bytes; not through a link, not a directory.
        let (read, bytes) = read_file(&path).expect("read");
        assert_eq!((Some(read), bytes.as_slice()), (FileStat::of_path(&path), &b"a: 22\n"[..]));
        assert!(read_file(&dir.path().join("link.yaml")).is_err());
        assert!(read_file(dir.path()).is_err());
    }

    /// Sets the access time of `path` to an old one, older than its modification time (which
    /// `relatime` would update on a read); returns a reader of its access time.
    fn aged(path: &std::path::Path) -> impl Fn() -> std::time::SystemTime + '_ {
        let old = rustix::fs::Timestamps {
            last_access: rustix::fs::Timespec { tv_sec: 1_000_000, tv_nsec: 0 },
            last_modification: rustix::fs::Timespec { tv_sec: 2_000_000, tv_nsec: 0 },
        };
        rustix::fs::utimensat(rustix::fs::CWD, path, &old, rustix::fs::AtFlags::empty()).expect("set times");
        move || std::fs::metadata(path).and_then(|m| m.accessed()).expect("atime")
    }

    /// Listing a directory gives its files, directories and other entries (a link is not
    /// followed), and leaves its access time as it was.
    #[test]
    fn a_listing_gives_the_entries_and_leaves_the_access_time() {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::write(dir.path().join("a.yaml"), "a: 1\n").expect("write");
        std::fs::create_dir(dir.path().join("sub")).expect("mkdir");
        std::os::unix::fs::symlink(dir.path().join("sub"), dir.path().join("link")).expect("symlink");
        let accessed = aged(dir.path());
        let before = accessed();
        let mut listed = list_dir_untouched(dir.path()).expect("list");
        listed.sort_by(|a, b| a.0.cmp(&b.0));
        assert_eq!(
            listed,
            [
                ("a.yaml".to_string(), EntryKind::File),
                ("link".to_string(), EntryKind::Other),
                ("sub".to_string(), EntryKind::Dir)
            ]
        );
        assert_eq!(accessed(), before);
        assert!(list_dir_untouched(&dir.path().join("a.yaml")).is_err());
    }

    /// Reading a file leaves its access time as it was, even one older than its last change.
    #[test]
    fn a_read_leaves_the_access_time() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("f.yaml");
        std::fs::write(&path, "a: 1\n").expect("write");
        let accessed = aged(&path);
        let before = accessed();
        let (_, bytes) = read_file(&path).expect("read");
        assert_eq!(bytes, b"a: 1\n");
        assert_eq!(accessed(), before);
    }
}

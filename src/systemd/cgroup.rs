//! How much memory the service may use: the tightest cgroup limit on the way from the service's
//! cgroup to the root (v2 `memory.max`/`memory.high`, v1 `memory.limit_in_bytes`), else
//! MemAvailable. The engine sizes its witness budget from this figure.
//!
//! Everything is read relative to a root directory so that tests can run on fixture trees.

use std::path::{Path, PathBuf};

use crate::units::Bytes;

/// The detected limit and where it came from, as shown in `Snark.Status`.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct MemoryLimit {
    pub bytes: Bytes,
    pub source: String,
}

/// Detects the limit on this machine.
pub fn detect() -> MemoryLimit {
    detect_in(Path::new("/"))
}

/// Detects the limit with `/proc` and `/sys/fs/cgroup` taken under `root`.
pub fn detect_in(root: &Path) -> MemoryLimit {
    let meminfo = std::fs::read_to_string(root.join("proc/meminfo")).unwrap_or_default();
    let total = meminfo_field(&meminfo, "MemTotal:");
    let available = meminfo_field(&meminfo, "MemAvailable:");
    let cgroups = std::fs::read_to_string(root.join("proc/self/cgroup")).unwrap_or_default();

    let cgroup = cgroup_v2_limit(root, &cgroups).or_else(|| cgroup_v1_limit(root, &cgroups));
    match (cgroup, total) {
        (Some(limit), Some(total)) if limit.bytes.get() > total => MemoryLimit {
            bytes: Bytes(total),
            source: format!("MemTotal (below {} {})", limit.source, limit.bytes),
        },
        (Some(limit), _) => limit,
        (None, _) => match available {
            Some(a) => MemoryLimit { bytes: Bytes(a), source: "MemAvailable".into() },
            None => MemoryLimit { bytes: Bytes(0), source: "unknown (no cgroup limit, no /proc/meminfo)".into() },
        },
    }
}

fn meminfo_field(meminfo: &str, name: &str) -> Option<u64> {
    let line = meminfo.lines().find(|l| l.starts_with(name))?;
    let kib: u64 = line[name.len()..].trim().trim_end_matches("kB").trim().parse().ok()?;
    Some(kib * 1024)
}

/// A limit file's value: a byte count, or `None` for "max" / missing / unparsable.
fn read_limit(path: &Path) -> Option<u64> {
    let text = std::fs::read_to_string(path).ok()?;
    let text = text.trim();
    if text == "max" {
        return None;
    }
    let v: u64 = text.parse().ok()?;
    // cgroup v1 reports "unlimited" as a page-rounded i64::MAX.
    (v < (1u64 << 62)).then_some(v)
}

/// Walks from `leaf` up to `top` (inclusive), yielding each directory.
fn ancestors(top: &Path, leaf: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut dir = leaf.to_path_buf();
    loop {
        out.push(dir.clone());
        if dir == top || !dir.pop() || !dir.starts_with(top) {
            break;
        }
    }
    out
}

fn cgroup_v2_limit(root: &Path, cgroups: &str) -> Option<MemoryLimit> {
    let rel = cgroups.lines().find_map(|l| l.strip_prefix("0::"))?;
    let top = root.join("sys/fs/cgroup");
    let leaf = top.join(rel.trim_start_matches('/'));
    let mut best: Option<MemoryLimit> = None;
    for dir in ancestors(&top, &leaf) {
        for file in ["memory.max", "memory.high"] {
            if let Some(v) = read_limit(&dir.join(file)) {
                if best.as_ref().is_none_or(|b| v < b.bytes.get()) {
                    let at = dir.strip_prefix(&top).map(|p| format!("/{}", p.display())).unwrap_or_default();
                    best = Some(MemoryLimit { bytes: Bytes(v), source: format!("cgroup v2 {file} at {at}") });
                }
            }
        }
    }
    best
}

fn cgroup_v1_limit(root: &Path, cgroups: &str) -> Option<MemoryLimit> {
    let rel = cgroups.lines().find_map(|l| {
        let mut parts = l.splitn(3, ':');
        let (_, controllers, path) = (parts.next()?, parts.next()?, parts.next()?);
        controllers.split(',').any(|c| c == "memory").then_some(path)
    })?;
    let top = root.join("sys/fs/cgroup/memory");
    let leaf = top.join(rel.trim_start_matches('/'));
    let mut best: Option<MemoryLimit> = None;
    for dir in ancestors(&top, &leaf) {
        if let Some(v) = read_limit(&dir.join("memory.limit_in_bytes")) {
            if best.as_ref().is_none_or(|b| v < b.bytes.get()) {
                let at = dir.strip_prefix(&top).map(|p| format!("/{}", p.display())).unwrap_or_default();
                best = Some(MemoryLimit { bytes: Bytes(v), source: format!("cgroup v1 memory.limit_in_bytes at {at}") });
            }
        }
    }
    best
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(root: &Path, rel: &str, text: &str) {
        let p = root.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }

    fn meminfo(root: &Path) {
        write(root, "proc/meminfo", "MemTotal:       25165824 kB\nMemFree: 1 kB\nMemAvailable:   20971520 kB\n");
    }

    #[test]
    fn v2_takes_the_tightest_limit_up_the_tree() {
        let t = tempfile::tempdir().unwrap();
        let r = t.path();
        meminfo(r);
        write(r, "proc/self/cgroup", "0::/system.slice/snarkd.service\n");
        write(r, "sys/fs/cgroup/system.slice/snarkd.service/memory.max", "max\n");
        write(r, "sys/fs/cgroup/system.slice/snarkd.service/memory.high", "8589934592\n");
        write(r, "sys/fs/cgroup/system.slice/memory.max", "4294967296\n");
        write(r, "sys/fs/cgroup/system.slice/memory.high", "max\n");
        let l = detect_in(r);
        assert_eq!(l.bytes, Bytes(4 << 30));
        assert_eq!(l.source, "cgroup v2 memory.max at /system.slice");
    }

    #[test]
    fn v2_high_below_max_wins() {
        let t = tempfile::tempdir().unwrap();
        let r = t.path();
        meminfo(r);
        write(r, "proc/self/cgroup", "0::/a/b\n");
        write(r, "sys/fs/cgroup/a/b/memory.max", "3221225472\n");
        write(r, "sys/fs/cgroup/a/b/memory.high", "2147483648\n");
        let l = detect_in(r);
        assert_eq!(l.bytes, Bytes(2 << 30));
        assert_eq!(l.source, "cgroup v2 memory.high at /a/b");
    }

    #[test]
    fn v2_all_max_falls_back_to_memavailable() {
        let t = tempfile::tempdir().unwrap();
        let r = t.path();
        meminfo(r);
        write(r, "proc/self/cgroup", "0::/user.slice\n");
        write(r, "sys/fs/cgroup/user.slice/memory.max", "max\n");
        write(r, "sys/fs/cgroup/user.slice/memory.high", "max\n");
        let l = detect_in(r);
        assert_eq!(l.bytes, Bytes(20971520 * 1024));
        assert_eq!(l.source, "MemAvailable");
    }

    #[test]
    fn v1_memory_controller() {
        let t = tempfile::tempdir().unwrap();
        let r = t.path();
        meminfo(r);
        write(r, "proc/self/cgroup", "12:cpu,cpuacct:/x\n5:memory:/system.slice/snarkd.service\n");
        write(r, "sys/fs/cgroup/memory/system.slice/snarkd.service/memory.limit_in_bytes", "6442450944\n");
        write(r, "sys/fs/cgroup/memory/system.slice/memory.limit_in_bytes", "9223372036854771712\n");
        let l = detect_in(r);
        assert_eq!(l.bytes, Bytes(6 << 30));
        assert_eq!(l.source, "cgroup v1 memory.limit_in_bytes at /system.slice/snarkd.service");
    }

    #[test]
    fn cgroup_limit_above_ram_is_capped_by_memtotal() {
        let t = tempfile::tempdir().unwrap();
        let r = t.path();
        meminfo(r);
        write(r, "proc/self/cgroup", "0::/big\n");
        write(r, "sys/fs/cgroup/big/memory.max", "1099511627776\n");
        let l = detect_in(r);
        assert_eq!(l.bytes, Bytes(25165824 * 1024));
        assert!(l.source.starts_with("MemTotal"), "{}", l.source);
    }
}

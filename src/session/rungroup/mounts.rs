//! Where the cgroup hierarchies are mounted and where this process sits in each, from
//! /proc/self/mountinfo and /proc/self/cgroup. Never assumed: a pure cgroup v2 machine mounts
//! cgroup2 at /sys/fs/cgroup, a hybrid one at /sys/fs/cgroup/unified, a container wherever.

use std::path::PathBuf;

/// One cgroup filesystem mount.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Mount {
    /// Where it is mounted.
    pub point: PathBuf,
    /// The part of the hierarchy it shows (`/` unless a container was given a subtree).
    pub root: String,
    /// `cgroup2`, or `cgroup` (v1).
    pub fstype: String,
    /// The v1 super options: its controllers (`cpu`, `cpuacct`, `freezer`, …) and flags
    /// such as `xattr`; empty for cgroup2.
    pub options: Vec<String>,
}

/// The cgroup mounts listed in a mountinfo text.
pub fn cgroup_mounts(mountinfo: &str) -> Vec<Mount> {
    mountinfo.lines().filter_map(parse_mount).collect()
}

/// `41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw`
fn parse_mount(line: &str) -> Option<Mount> {
    let (before, after) = line.split_once(" - ")?;
    let fields: Vec<&str> = before.split(' ').collect();
    let (root, point) = (fields.get(3)?, fields.get(4)?);
    let mut after = after.split(' ');
    let fstype = after.next()?;
    if fstype != "cgroup" && fstype != "cgroup2" {
        return None;
    }
    let _source = after.next();
    let options = after.next().unwrap_or("");
    let options = if fstype == "cgroup" {
        options
            .split(',')
            .filter(|o| !matches!(*o, "rw" | "ro") && !o.contains('='))
            .map(str::to_owned)
            .collect()
    } else {
        Vec::new()
    };
    Some(Mount {
        point: PathBuf::from(unescape(point)),
        root: unescape(root),
        fstype: fstype.to_owned(),
        options,
    })
}

/// mountinfo writes space, tab, newline and backslash as `\040`-style octal.
fn unescape(field: &str) -> String {
    let bytes = field.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let octal = bytes
            .get(i + 1..i + 4)
            .filter(|d| d.iter().all(u8::is_ascii_digit));
        match (bytes[i], octal) {
            (b'\\', Some(digits)) => {
                let value = digits.iter().fold(0u32, |v, d| v * 8 + (d - b'0') as u32);
                out.push(value as u8);
                i += 4;
            }
            (b, _) => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// This process's cgroup in the v2 hierarchy (`0::/path`), from a /proc/self/cgroup text.
pub fn own_v2_path(cgroup: &str) -> Option<String> {
    cgroup
        .lines()
        .find_map(|l| l.strip_prefix("0::"))
        .map(str::to_owned)
}

/// This process's cgroup in the v1 hierarchy holding `controller` (`2:cpu,cpuacct:/path`).
pub fn own_v1_path(cgroup: &str, controller: &str) -> Option<String> {
    cgroup.lines().find_map(|l| {
        let mut parts = l.splitn(3, ':');
        let (_, controllers, path) = (parts.next()?, parts.next()?, parts.next()?);
        controllers
            .split(',')
            .any(|c| c == controller)
            .then(|| path.to_owned())
    })
}

/// The directory of `path` (a cgroup, as /proc/self/cgroup names it) under `mount`; `None`
/// when the mount does not show it (a container given another subtree).
pub fn dir_of(mount: &Mount, path: &str) -> Option<PathBuf> {
    let relative = if mount.root == "/" {
        path
    } else {
        let rest = path.strip_prefix(mount.root.as_str())?;
        if !rest.is_empty() && !rest.starts_with('/') {
            return None;
        }
        rest
    };
    Some(mount.point.join(relative.trim_start_matches('/')))
}

#[cfg(test)]
mod tests {
    use super::*;

    const HYBRID: &str = "\
31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755
32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu
33 31 0:30 / /sys/fs/cgroup/cpuacct rw,relatime - cgroup cgroup rw,cpuacct
37 31 0:34 / /sys/fs/cgroup/freezer rw,relatime - cgroup cgroup rw,freezer
40 31 0:37 / /sys/fs/cgroup/systemd rw,relatime - cgroup cgroup rw,xattr,name=systemd
41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw
";

    #[test]
    fn finds_every_hierarchy_of_a_hybrid_layout() {
        let mounts = cgroup_mounts(HYBRID);
        assert_eq!(mounts.len(), 5, "{mounts:?}");
        let v2 = mounts.iter().find(|m| m.fstype == "cgroup2").unwrap();
        assert_eq!(v2.point, PathBuf::from("/sys/fs/cgroup/unified"));
        let cpuacct = mounts
            .iter()
            .find(|m| m.options.contains(&"cpuacct".to_owned()))
            .unwrap();
        assert_eq!(cpuacct.point, PathBuf::from("/sys/fs/cgroup/cpuacct"));
        let systemd = mounts
            .iter()
            .find(|m| m.point.ends_with("systemd"))
            .unwrap();
        assert_eq!(systemd.options, ["xattr"], "{systemd:?}");
    }

    #[test]
    fn own_paths_and_their_directories() {
        let cgroup = "4:memory:/process_api/a5\n2:cpu,cpuacct:/user/1\n0::/user.slice/s-1.scope\n";
        assert_eq!(
            own_v2_path(cgroup).as_deref(),
            Some("/user.slice/s-1.scope")
        );
        assert_eq!(own_v1_path(cgroup, "cpuacct").as_deref(), Some("/user/1"));
        assert_eq!(own_v1_path(cgroup, "freezer"), None);
        let pure = cgroup_mounts("25 1 0:22 / /sys/fs/cgroup rw - cgroup2 cgroup2 rw,nsdelegate\n");
        assert_eq!(
            dir_of(&pure[0], "/user.slice/s-1.scope"),
            Some(PathBuf::from("/sys/fs/cgroup/user.slice/s-1.scope"))
        );
        assert_eq!(dir_of(&pure[0], "/"), Some(PathBuf::from("/sys/fs/cgroup")));
        // A container shown only its own subtree.
        let boxed = cgroup_mounts("25 1 0:22 /docker/ab /sys/fs/cgroup ro - cgroup2 cgroup2 rw\n");
        assert_eq!(
            dir_of(&boxed[0], "/docker/ab/inner"),
            Some(PathBuf::from("/sys/fs/cgroup/inner"))
        );
        assert_eq!(dir_of(&boxed[0], "/docker/abc"), None);
    }

    #[test]
    fn escaped_mount_points() {
        let m = cgroup_mounts("25 1 0:22 / /mnt/my\\040groups rw - cgroup2 none rw\n");
        assert_eq!(m[0].point, PathBuf::from("/mnt/my groups"));
    }
}

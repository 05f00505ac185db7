//! A ceiling on the processes one script may have at once ([`PROCESS_LIMIT`]), applied by the
//! reaper to itself before it starts the script, so that everything the script starts counts:
//! a `pids` control group of the run's own where this process may make one (the cgroup v1
//! `pids` hierarchy, or cgroup v2 where `pids` is enabled for the children of the reaper's
//! group), else `RLIMIT_NPROC` raised by the user's processes already running (it counts per
//! user, and does not bind root), else none: the timeout and the reaper's sweep still end
//! everything the script started.

use std::path::{Path, PathBuf};

/// The processes and threads one script may have at once (itself included).
pub const PROCESS_LIMIT: u32 = 256;

/// The ceiling a run got, to take down when the run is over.
#[derive(Debug, PartialEq, Eq)]
pub enum Ceiling {
    /// The reaper moved into `group`, a child of `parent`, whose `pids.max` holds the limit.
    Group {
        group: PathBuf,
        parent: PathBuf,
    },
    /// `RLIMIT_NPROC` of the reaper and what it starts.
    UserLimit,
    None,
}

impl Ceiling {
    /// Puts the reaper (and so whatever it starts next) under `limit` processes.
    pub fn apply(limit: u32) -> Self {
        let (mounts, membership) = (
            std::fs::read_to_string("/proc/self/mountinfo").unwrap_or_default(),
            std::fs::read_to_string("/proc/self/cgroup").unwrap_or_default(),
        );
        if let Some(parent) = own_pids_group(&mounts, &membership)
            && let Some(ceiling) = Self::group_under(&parent, limit)
        {
            return ceiling;
        }
        if user_limit(limit) {
            return Self::UserLimit;
        }
        Self::None
    }

    /// A group of the run's own under `parent` with `pids.max` at `limit`, the reaper moved in.
    fn group_under(parent: &Path, limit: u32) -> Option<Self> {
        let process = std::process::id();
        let group = parent.join(format!("synapse-script-{process}"));
        std::fs::create_dir(&group).ok()?;
        let entered = std::fs::write(group.join("pids.max"), limit.to_string()).is_ok()
            && std::fs::write(group.join("cgroup.procs"), process.to_string()).is_ok();
        if !entered {
            // No `pids` controller for the children here, or no right to move in.
            std::fs::remove_dir(&group).ok();
            return None;
        }
        Some(Self::Group {
            group,
            parent: parent.to_owned(),
        })
    }

    /// Leaves and removes the run's group, once the script and what it started are gone.
    pub fn release(self) {
        if let Self::Group { group, parent } = self {
            std::fs::write(parent.join("cgroup.procs"), std::process::id().to_string()).ok();
            std::fs::remove_dir(&group).ok();
        }
    }
}

/// The folder of the `pids` control group this process is in, from `/proc/self/mountinfo` and
/// `/proc/self/cgroup`: the v1 `pids` hierarchy, or the v2 unified one.
fn own_pids_group(mounts: &str, membership: &str) -> Option<PathBuf> {
    let (mount_point, mount_root, version_two) = mounts.lines().find_map(|line| {
        let (before, after) = line.split_once(" - ")?;
        let fields: Vec<&str> = before.split(' ').collect();
        let mut after = after.split(' ');
        let kind = after.next()?;
        let options = after.nth(1)?;
        let pids_v1 = kind == "cgroup" && options.split(',').any(|option| option == "pids");
        // Beside v1 hierarchies (a hybrid system), the v2 one holds no controllers.
        let pids_v2 = kind == "cgroup2" && !mounts.contains(" - cgroup ");
        if !(pids_v1 || pids_v2) {
            return None;
        }
        Some((*fields.get(4)?, *fields.get(3)?, pids_v2))
    })?;
    let path = membership.lines().find_map(|line| {
        let mut parts = line.splitn(3, ':');
        let (_, controllers, path) = (parts.next()?, parts.next()?, parts.next()?);
        let wanted = if version_two {
            controllers.is_empty()
        } else {
            controllers
                .split(',')
                .any(|controller| controller == "pids")
        };
        wanted.then_some(path)
    })?;
    let relative = path.strip_prefix(mount_root).unwrap_or(path);
    Some(Path::new(mount_point).join(relative.trim_start_matches('/')))
}

/// Sets `RLIMIT_NPROC` to the user's processes now and `limit` more; false for root, whom it
/// does not bind, and where it cannot be set.
fn user_limit(limit: u32) -> bool {
    use rustix::process::{Resource, Rlimit, getuid, setrlimit};
    let user = getuid();
    if user.is_root() {
        return false;
    }
    let running = users_processes(user.as_raw());
    let ceiling = running.saturating_add(u64::from(limit));
    setrlimit(
        Resource::Nproc,
        Rlimit {
            current: Some(ceiling),
            maximum: Some(ceiling),
        },
    )
    .is_ok()
}

/// How many processes of `user` there are (from `/proc/*/status`).
fn users_processes(user: u32) -> u64 {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return 0;
    };
    let owned = entries.flatten().filter(|entry| {
        entry
            .file_name()
            .to_str()
            .is_some_and(|name| name.bytes().all(|byte| byte.is_ascii_digit()))
            && std::fs::read_to_string(entry.path().join("status")).is_ok_and(|status| {
                status.lines().any(|line| {
                    line.strip_prefix("Uid:")
                        .and_then(|ids| ids.split_whitespace().next())
                        .is_some_and(|real| real == user.to_string())
                })
            })
    });
    owned.count() as u64
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    const V1: &str = "\
35 25 0:30 / /sys/fs/cgroup/memory rw,relatime shared:12 - cgroup cgroup rw,memory
40 25 0:35 / /sys/fs/cgroup/pids rw,relatime shared:17 - cgroup cgroup rw,pids
42 25 0:37 / /sys/fs/cgroup/unified rw,relatime shared:19 - cgroup2 cgroup2 rw
";
    const V2: &str = "\
30 22 0:26 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime shared:4 - cgroup2 cgroup2 rw,nsdelegate
";

    #[test]
    fn the_pids_group_is_found_in_either_version() {
        assert_eq!(
            own_pids_group(V1, "8:pids:/team/a\n4:memory:/x\n0::/\n"),
            Some(PathBuf::from("/sys/fs/cgroup/pids/team/a"))
        );
        assert_eq!(
            own_pids_group(V2, "0::/user.slice/synapse.service\n"),
            Some(PathBuf::from("/sys/fs/cgroup/user.slice/synapse.service"))
        );
        // A container whose cgroup mount starts below the hierarchy's root.
        let nested = "40 25 0:35 /docker/abc /sys/fs/cgroup/pids rw - cgroup cgroup rw,pids\n";
        assert_eq!(
            own_pids_group(nested, "8:pids:/docker/abc\n"),
            Some(PathBuf::from("/sys/fs/cgroup/pids"))
        );
        assert_eq!(own_pids_group("", "0::/\n"), None);
    }
}

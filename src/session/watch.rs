//! What `--watch-pid [ROLE=]PID` and `--watch [ROLE=]NAME` ask for: processes framelab did
//! not start, each under a role that names it in the process table and in comparisons
//! (`cpu_per_frame.decoderd`). Without `ROLE=` the role is the name: the watched name, or
//! the watched process's own name.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// The roles given with `ROLE=`, by pid and by name (the others' role is their name).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct WatchRoles {
    #[serde(default)]
    pub pids: BTreeMap<u32, String>,
    #[serde(default)]
    pub names: BTreeMap<String, String>,
}

impl WatchRoles {
    pub fn is_empty(&self) -> bool {
        self.pids.is_empty() && self.names.is_empty()
    }
}

/// Everything watched: pids, names, and the roles given to them.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct WatchList {
    pub pids: Vec<u32>,
    pub names: Vec<String>,
    pub roles: WatchRoles,
}

impl WatchList {
    /// The role of a process watched by pid: the one given, else its name.
    pub fn role_of_pid(&self, pid: u32, name: &str) -> String {
        self.roles
            .pids
            .get(&pid)
            .cloned()
            .unwrap_or_else(|| name.to_owned())
    }

    /// The role of processes found by a watched name: the one given, else the name.
    pub fn role_of_name(&self, name: &str) -> String {
        self.roles
            .names
            .get(name)
            .cloned()
            .unwrap_or_else(|| name.to_owned())
    }
}

/// One `--watch-pid` or `--watch` value: its role when given (`ROLE=`), and what follows.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WatchArg<T> {
    pub role: Option<String>,
    pub target: T,
}

/// Splits `ROLE=REST` (or plain `REST`) and checks the role: it names a metric key
/// (`cpu.ROLE`), so no spaces, commas or `=`, and `command` is the launched command's.
pub fn split_role(text: &str) -> Result<(Option<String>, &str), String> {
    let Some((role, rest)) = text.split_once('=') else {
        return Ok((None, text));
    };
    let role = role.trim();
    if role.is_empty() {
        return Err(format!(
            "'{text}' has an empty role before '=': write ROLE=..., e.g. decoderd=1234"
        ));
    }
    if role
        .chars()
        .any(|c| c.is_whitespace() || c == ',' || c == '=' || c == '.')
    {
        return Err(format!(
            "role '{role}' may not hold spaces, commas or dots (it names metrics such as cpu.{role}): use letters, digits, - or _"
        ));
    }
    if role == crate::analyze::cpu::COMMAND_ROLE {
        return Err(
            "role 'command' is the launched command's: give the watched process another role"
                .to_owned(),
        );
    }
    Ok((Some(role.to_owned()), rest))
}

/// `--watch [ROLE=]NAME`.
pub fn parse_watch_name(text: &str) -> Result<WatchArg<String>, String> {
    let (role, name) = split_role(text)?;
    let name = name.trim();
    if name.is_empty() {
        return Err(format!(
            "'{text}' names no process: give a process name, e.g. --watch ffmpeg or --watch decoder=ffmpeg"
        ));
    }
    Ok(WatchArg {
        role,
        target: name.to_owned(),
    })
}

/// Builds the watch list from the parsed options, with one line for a name or pid given two
/// different roles.
pub fn watch_list(pids: &[WatchArg<u32>], names: &[WatchArg<String>]) -> Result<WatchList, String> {
    let mut list = WatchList::default();
    for arg in pids {
        if !list.pids.contains(&arg.target) {
            list.pids.push(arg.target);
        }
        if let Some(role) = &arg.role {
            let earlier = list.roles.pids.insert(arg.target, role.clone());
            if earlier.as_ref().is_some_and(|r| r != role) {
                return Err(format!(
                    "--watch-pid {}: given two roles ({} and {role}); give it one",
                    arg.target,
                    earlier.unwrap_or_default()
                ));
            }
        }
    }
    for arg in names {
        if !list.names.contains(&arg.target) {
            list.names.push(arg.target.clone());
        }
        if let Some(role) = &arg.role {
            let earlier = list.roles.names.insert(arg.target.clone(), role.clone());
            if earlier.as_ref().is_some_and(|r| r != role) {
                return Err(format!(
                    "--watch {}: given two roles ({} and {role}); give it one",
                    arg.target,
                    earlier.unwrap_or_default()
                ));
            }
        }
    }
    Ok(list)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_role_is_optional_and_defaults_to_the_name() {
        let plain = parse_watch_name("ffmpeg").unwrap();
        assert_eq!(plain.role, None);
        let named = parse_watch_name("decoder=ffmpeg").unwrap();
        assert_eq!(named.role.as_deref(), Some("decoder"));
        assert_eq!(named.target, "ffmpeg");
        let list = watch_list(
            &[WatchArg {
                role: Some("decoderd".into()),
                target: 42,
            }],
            &[plain, named],
        )
        .unwrap();
        assert_eq!(list.names, ["ffmpeg"]);
        assert_eq!(list.role_of_name("ffmpeg"), "decoder");
        assert_eq!(list.role_of_pid(42, "python3"), "decoderd");
        assert_eq!(list.role_of_pid(7, "python3"), "python3");
    }

    #[test]
    fn one_pid_with_two_roles_is_refused() {
        let twice = [
            WatchArg {
                role: Some("a".into()),
                target: 42,
            },
            WatchArg {
                role: Some("b".into()),
                target: 42,
            },
        ];
        assert!(watch_list(&twice, &[]).unwrap_err().contains("two roles"));
    }

    #[test]
    fn bad_roles_are_refused_with_what_to_do() {
        assert!(split_role("=12").unwrap_err().contains("empty role"));
        assert!(split_role("a b=12").unwrap_err().contains("spaces"));
        assert!(split_role("command=12").unwrap_err().contains("command"));
        assert!(parse_watch_name("dec=")
            .unwrap_err()
            .contains("names no process"));
    }
}

//! The run group's lines on processes left at the end (`RunGroupFacts::escaped`), said
//! shortly: one line per thing done, naming how many and the first few, not one line per
//! process (a script that leaves 20 background jobs gave 20 warnings and 20 notes).

/// Processes named in a summary line; the rest are counted.
const NAMED: usize = 3;

/// `process 4242 (burner) was still running …: killed with it` → (`4242 (burner)`, what
/// happened); `None` for a line of another shape.
fn split(line: &str) -> Option<(&str, &str)> {
    let rest = line.strip_prefix("process ")?;
    let (pid, _) = rest.split_once(" (")?;
    pid.parse::<u32>().ok()?;
    // A name may hold ") " itself: what happened starts with "was" or "had".
    let close = [") was ", ") had "]
        .iter()
        .filter_map(|p| rest.find(p))
        .min()?;
    Some((&rest[..=close], &rest[close + 2..]))
}

/// `lines` with those saying the same of several processes folded into one:
/// `20 processes (12970 (testprog), 12966 (testprog), 12971 (testprog) and 17 more) were
/// still running in the command's process group when the command ended: killed with it`.
/// Lines of another shape stay as they are; the order is that of each kind's first line.
pub fn summarize(lines: &[String]) -> Vec<String> {
    let mut kinds: Vec<(&str, Vec<&str>)> = Vec::new();
    let mut out: Vec<Result<usize, &str>> = Vec::new();
    for line in lines {
        match split(line) {
            Some((who, what)) => match kinds.iter().position(|(w, _)| *w == what) {
                Some(at) => kinds[at].1.push(who),
                None => {
                    out.push(Ok(kinds.len()));
                    kinds.push((what, vec![who]));
                }
            },
            None => out.push(Err(line)),
        }
    }
    out.into_iter()
        .map(|entry| match entry {
            Err(line) => line.to_owned(),
            Ok(kind) => {
                let (what, who) = &kinds[kind];
                if who.len() == 1 {
                    return format!("process {} {what}", who[0]);
                }
                let named = who[..who.len().min(NAMED)].join(", ");
                let more = match who.len().saturating_sub(NAMED) {
                    0 => String::new(),
                    n => format!(" and {n} more"),
                };
                // "was …" of one process is "were …" of several.
                let what = (what.strip_prefix("was "))
                    .map_or_else(|| what.to_string(), |rest| format!("were {rest}"));
                format!("{} processes ({named}{more}) {what}", who.len())
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn killed(pid: u32, name: &str) -> String {
        format!("process {pid} ({name}) was still running in the command's process group when the command ended: killed with it")
    }

    #[test]
    fn twenty_leftovers_are_one_line_naming_three() {
        let mut lines: Vec<String> = (0..20).map(|i| killed(100 + i, "testprog")).collect();
        lines.push(
            "process 7 (sleep) had left the run's cgroup (it was in /): killed by the process-tree walk"
                .into(),
        );
        lines.push("the run's cgroup is left behind: busy".into());
        lines.push(killed(200, "a) b"));
        assert_eq!(
            summarize(&lines),
            [
                "21 processes (100 (testprog), 101 (testprog), 102 (testprog) and 18 more) \
                 were still running in the command's process group when the command ended: \
                 killed with it",
                "process 7 (sleep) had left the run's cgroup (it was in /): killed by the \
                 process-tree walk",
                "the run's cgroup is left behind: busy",
            ]
        );
    }

    #[test]
    fn two_of_a_kind_are_both_named_and_one_is_as_it_was() {
        let lines = [killed(1, "x"), killed(2, "y")];
        assert_eq!(
            summarize(&lines),
            [
                "2 processes (1 (x), 2 (y)) were still running in the command's process group \
              when the command ended: killed with it"
            ]
        );
        assert_eq!(summarize(&lines[..1]), [lines[0].clone()]);
    }
}

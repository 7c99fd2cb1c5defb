//! A run's default name (its program's) and default file name (NAME-TIMESTAMP.framelab).

use std::path::PathBuf;

use super::options::RunOptions;

pub fn default_name(command: &[String]) -> String {
    let program = std::path::Path::new(&command[0])
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    program
}

pub fn default_output(opts: &RunOptions) -> PathBuf {
    let name = opts
        .name
        .clone()
        .unwrap_or_else(|| default_name(&opts.command));
    let stamp = humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string();
    let stamp: String = stamp
        .chars()
        .filter(|c| c.is_ascii_alphanumeric())
        .collect();
    PathBuf::from(format!(
        "{}-{}.framelab",
        slug(&name),
        stamp.trim_end_matches('Z')
    ))
}

/// `demo (depth 1)` → `demo-depth-1`: letters, digits, `_` and single dashes, at most 64
/// characters (a file name holds 255 bytes; a 10 KB `--name` must still make one).
fn slug(name: &str) -> String {
    let words: Vec<&str> = name
        .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .filter(|w| !w.is_empty())
        .collect();
    if words.is_empty() {
        "run".to_owned()
    } else {
        let mut slug = words.join("-");
        slug.truncate(64);
        slug.trim_end_matches('-').to_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn run_file_names_are_tidy() {
        assert_eq!(slug("demo (depth 1)"), "demo-depth-1");
        assert_eq!(slug("./my host"), "my-host");
        assert_eq!(slug("ü (ï)"), "run");
        assert_eq!(
            slug(&"L".repeat(10_000)).len(),
            64,
            "a 10 KB --name still makes a file name"
        );
        let opts = RunOptions {
            command: vec!["/usr/bin/ffmpeg".into()],
            ..RunOptions::default()
        };
        let name = default_output(&opts).to_string_lossy().into_owned();
        assert!(
            name.starts_with("ffmpeg-2") && name.ends_with(".framelab") && !name.contains(':'),
            "{name}"
        );
    }
}

//! `compare --by KEY`: the runs of the files given, one variant per value of their tag
//! KEY (`run --tag KEY=VALUE`), in the order the values first appear.

use anyhow::{bail, Result};

use super::load::Source;
use crate::display;

/// The variants the tag makes, and how many runs have no such tag (left out, said).
pub struct ByTag {
    pub sources: Vec<Source>,
    pub untagged: usize,
}

/// One source per value of tag `key` over every run of `sources` (files, or `FILE:RUN,…`).
pub fn group_by_tag(sources: &[Source], key: &str) -> Result<ByTag> {
    let mut groups: Vec<(String, Source)> = Vec::new();
    let mut untagged = 0;
    for source in sources {
        if source.variant.is_some() {
            bail!("--by {key} names the variants by the tag's values: give the files without --variant");
        }
        if crate::store::load_experiment(&source.path)?.is_some() {
            bail!(
                "--by {key}: {} is a bench's experiment, compared by its variants and \
                 parameters; --by groups the runs of run files (framelab run --tag {key}=VALUE)",
                source.path.display()
            );
        }
        for meta in crate::store::list_runs(&source.path)? {
            if source
                .run_ids
                .as_ref()
                .is_some_and(|ids| !ids.contains(&meta.id))
            {
                continue;
            }
            let Some(tag) = meta.tags.iter().find(|t| t.key == key) else {
                untagged += 1;
                continue;
            };
            let at = match groups
                .iter()
                .position(|(v, s)| *v == tag.value && s.path == source.path)
            {
                Some(at) => at,
                None => {
                    groups.push((
                        tag.value.clone(),
                        Source {
                            path: source.path.clone(),
                            variant: Some(tag.value.clone()),
                            run_ids: Some(Vec::new()),
                        },
                    ));
                    groups.len() - 1
                }
            };
            groups[at]
                .1
                .run_ids
                .get_or_insert_with(Vec::new)
                .push(meta.id);
        }
    }
    let mut values: Vec<&str> = Vec::new();
    for (value, _) in &groups {
        if values.contains(&value.as_str()) {
            bail!(
                "--by {key}: runs tagged {key}={} are in more than one file; put them in one \
                 file (framelab run -o FILE appends) or name the variants with --variant",
                display::name(value)
            );
        }
        values.push(value);
    }
    if groups.len() < 2 {
        let found = match values.first() {
            Some(value) => format!("only {key}={}", display::name(value)),
            None => format!("no run tagged {key}"),
        };
        bail!(
            "--by {key}: {found} among the runs given; tag the runs with framelab run --tag \
             {key}=VALUE, two values or more"
        );
    }
    Ok(ByTag {
        sources: groups.into_iter().map(|(_, s)| s).collect(),
        untagged,
    })
}

//! `--format`'s clap side: one `ValueEnum` per command offering exactly the formats that
//! command writes (`framelab::render::format`'s lists; the test below holds them equal),
//! each turned into the library's one `Format`.

use framelab::render::Format;

/// Declares a command's `--format` values and their conversion into [`Format`]; a
/// variant's doc comment is its help in `--help`.
macro_rules! format_arg {
    ($(#[$doc:meta])* $name:ident { $($(#[$variant_doc:meta])* $variant:ident),+ $(,)? }) => {
        $(#[$doc])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
        pub enum $name {
            $($(#[$variant_doc])* $variant),+
        }

        impl From<$name> for Format {
            fn from(format: $name) -> Format {
                match format {
                    $($name::$variant => Format::$variant),+
                }
            }
        }
    };
}

format_arg!(
    /// The report printed by `run`, `demo` and `import`.
    RunReportFormat { Text, Markdown, Json }
);
format_arg!(
    /// `report --format`: the run report's, and the HTML page.
    ReportFormat { Text, Markdown, Json, Html }
);
format_arg!(
    /// `compare --format` and `bench --format`.
    CompareFormat {
        Text,
        Markdown,
        Json,
        Csv,
        /// One self-contained page with plots (to standard output, or compare -o FILE; bench -o is
        /// the experiment file).
        Html,
    }
);
format_arg!(
    /// `timers --format`.
    TimersFormat { Text, Markdown, Json }
);
format_arg!(
    /// `hist --format`.
    HistFormat { Text, Markdown, Json }
);
format_arg!(
    /// `whatif --format`.
    WhatifFormat { Text, Markdown, Json }
);
format_arg!(
    /// The formats `framelab export` writes.
    ExportFormat {
        /// Perfetto protobuf trace: a track per thread, stages as slices linked by flows per frame
        Perfetto,
        /// Chrome trace event JSON (object form)
        Chrome,
        /// One row per span: frame, stage, pid, tid, thread, start_ns, dur_ns
        Csv,
    }
);
format_arg!(
    /// `profile --format`.
    ProfileFormat {
        Text,
        Markdown,
        Json,
        /// `stage;outer;...;leaf count` lines, one per distinct stack
        Folded,
        /// A flame graph (SVG), stage names as the outermost frames
        Svg,
        /// speedscope's file format (one profile per thread, samples in time order)
        Speedscope,
    }
);

format_arg!(
    /// `history show --format`.
    HistoryShowFormat { Text, Markdown, Json }
);
format_arg!(
    /// `history check --format`.
    HistoryCheckFormat { Text, Markdown, Json }
);
format_arg!(
    /// `history export --format`.
    HistoryExportFormat { Csv, Parquet }
);

#[cfg(test)]
mod tests {
    use super::*;
    use clap::ValueEnum;
    use framelab::render::format::{self as lists, Formats};

    /// `T`'s values are `list`'s formats, in its order, each named as `Format::name` says.
    fn assert_offers<T: ValueEnum + Into<Format> + Copy>(list: Formats) {
        let offered: Vec<Format> = T::value_variants().iter().map(|&v| v.into()).collect();
        assert_eq!(offered, list.formats, "framelab {}", list.command);
        for variant in T::value_variants() {
            let value = variant.to_possible_value().unwrap();
            assert_eq!(value.get_name(), Into::<Format>::into(*variant).name());
        }
    }

    #[test]
    fn each_command_offers_exactly_the_formats_it_writes() {
        assert_offers::<RunReportFormat>(lists::RUN_REPORT);
        assert_offers::<ReportFormat>(lists::REPORT);
        assert_offers::<CompareFormat>(lists::COMPARE);
        assert_offers::<TimersFormat>(lists::TIMERS);
        assert_offers::<WhatifFormat>(lists::WHATIF);
        assert_offers::<HistFormat>(lists::HIST);
        assert_offers::<ExportFormat>(lists::EXPORT);
        assert_offers::<ProfileFormat>(lists::PROFILE);
        assert_offers::<HistoryShowFormat>(lists::HISTORY_SHOW);
        assert_offers::<HistoryCheckFormat>(lists::HISTORY_CHECK);
        assert_offers::<HistoryExportFormat>(lists::HISTORY_EXPORT);
    }
}

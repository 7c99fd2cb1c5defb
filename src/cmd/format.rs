//! `--format`'s clap side: one `ValueEnum` per command offering exactly the formats that
//! command writes (`framelab::render::format`'s lists; the test below holds them equal),
//! each turned into the library's one `Format`.

use framelab::render::Format;

use crate::cli::choices::choice;

choice! {
    /// The report printed by `run`, `demo` and `import`.
    RunReportFormat => Format { Text, Markdown, Json }
}
choice! {
    /// `report --format`: the run report's, and the HTML page.
    ReportFormat => Format { Text, Markdown, Json, Html }
}
choice! {
    /// `compare --format` and `bench --format`.
    CompareFormat => Format {
        Text,
        Markdown,
        Json,
        Csv,
        /// One self-contained page with plots (to standard output, or compare -o FILE; bench -o is
        /// the experiment file).
        Html,
    }
}
choice! {
    /// `timers --format`.
    TimersFormat => Format { Text, Markdown, Json }
}
choice! {
    /// `hist --format`.
    HistFormat => Format { Text, Markdown, Json }
}
choice! {
    /// `whatif --format`.
    WhatifFormat => Format { Text, Markdown, Json }
}
choice! {
    /// The formats `framelab export` writes.
    ExportFormat => Format {
        /// Perfetto protobuf trace: a track per thread, stages as slices linked by flows per frame
        Perfetto,
        /// Chrome trace event JSON (object form)
        Chrome,
        /// One row per span: frame, stage, pid, tid, thread, start_ns, dur_ns
        Csv,
    }
}
choice! {
    /// `profile --format`.
    ProfileFormat => Format {
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
}

choice! {
    /// `history show --format`.
    HistoryShowFormat => Format { Text, Markdown, Json }
}
choice! {
    /// `history check --format`.
    HistoryCheckFormat => Format { Text, Markdown, Json }
}
choice! {
    /// `history export --format`.
    HistoryExportFormat => Format { Csv, Parquet }
}

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

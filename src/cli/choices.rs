//! The command line's words for the library's choice enums. The library's enums are plain
//! (no clap below cmd/): each is mirrored here as a clap `ValueEnum` with the same
//! variants, and turned into the library's with `From`.

/// A clap `ValueEnum` with the variants (and help) given, converted into the library's
/// enum of the same variant names.
macro_rules! choice {
    ($(#[$meta:meta])* $name:ident => $target:ty { $($(#[$vmeta:meta])* $variant:ident),+ $(,)? }) => {
        $(#[$meta])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
        pub enum $name {
            $($(#[$vmeta])* $variant),+
        }

        impl From<$name> for $target {
            fn from(choice: $name) -> Self {
                match choice {
                    $($name::$variant => <$target>::$variant),+
                }
            }
        }
    };
}
pub(crate) use choice;

choice! {
    /// `--call-graph` of run, bench and demo.
    CallGraph => framelab::profile::CallGraph {
        /// The top of the user stack is copied with each sample and unwound with the binaries'
        /// DWARF unwind tables (works without frame pointers); the frame-pointer chain is kept
        /// where it is longer
        Dwarf,
        /// The kernel follows frame pointers (cheapest; stacks of code built without them
        /// miss callers)
        Fp,
    }
}

choice! {
    /// `--warmup-from` (the library's third way, a number of frames, is `--warmup-frames`).
    WarmupFrom => framelab::model::WarmupFrom {
        /// The command's launch (every run before schema 4).
        Launch,
        /// The first span the command recorded: start-up before it is not warmup.
        FirstFrame,
    }
}

choice! {
    /// bench's `--order`.
    Order => framelab::bench::Order {
        /// A B A B …: every variant and parameter value once, then again.
        Interleaved,
        /// Each round in a random order (seeded), so no variant always follows another.
        Shuffled,
    }
}

choice! {
    /// hist's `--by`.
    GroupBy => framelab::hist::GroupBy {
        Thread,
        Process,
    }
}

choice! {
    /// demo's `--pacer`.
    PacerKind => framelab::demo::PacerKind {
        /// One absolute `clock_nanosleep` per frame.
        Sleep,
        /// Sleep, then spin for an adaptive window before the deadline.
        Hybrid,
    }
}

choice! {
    /// import's `--format`: the formats it reads.
    ImportFormat => framelab::import::Format {
        /// Chrome trace event JSON (array or object form)
        Chrome,
        /// Perfetto protobuf trace (track events)
        Perfetto,
        /// libwayland's WAYLAND_DEBUG=1 log (client or server side)
        Wayland,
        /// PresentMon CSV (v1 and v2 columns)
        Presentmon,
        /// MangoHud per-frame CSV log
        Mangohud,
        /// ffmpeg -benchmark_all output
        Ffmpeg,
        /// bpftrace hist()/lhist() output, text or JSON (-f json)
        Bpftrace,
        /// CSV of spans or events, columns chosen with --map
        Csv,
        /// JSON Lines of spans or events, fields chosen with --map
        Jsonl,
    }
}

choice! {
    /// import's `--time-unit`.
    TimeUnit => framelab::import::TimeUnit {
        Ns,
        Us,
        Ms,
        S,
    }
}

#[cfg(test)]
mod tests {
    use clap::ValueEnum;

    /// Each choice's word is the library's own name for it, where the library has one.
    #[test]
    fn words_match_the_library_names() {
        for choice in super::ImportFormat::value_variants() {
            let word = choice.to_possible_value().unwrap().get_name().to_owned();
            assert_eq!(word, framelab::import::Format::from(*choice).name());
        }
        for choice in super::PacerKind::value_variants() {
            let word = choice.to_possible_value().unwrap().get_name().to_owned();
            assert_eq!(word, framelab::demo::PacerKind::from(*choice).name());
        }
        let every_import_format = super::ImportFormat::value_variants().len();
        assert_eq!(every_import_format, framelab::import::Format::ALL.len());
    }
}

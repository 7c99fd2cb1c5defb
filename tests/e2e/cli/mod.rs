//! What every subcommand shares: bad input, hostile names, option combinations, output files, units, the notes' options and the README's examples.

mod bad_input;
mod hostile_input;
mod note_options;
mod option_combinations;
mod output_files;
mod readme_examples;
mod units;
mod usage_errors;

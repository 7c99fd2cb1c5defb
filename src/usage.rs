//! A usage error found after the arguments were parsed (a name that matches several
//! things): the process exits 2, as for the usage errors the argument parser finds.

/// The error's text is the whole message; `main` prints it and exits 2.
#[derive(Debug)]
pub struct UsageError(pub String);

impl std::fmt::Display for UsageError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for UsageError {}

/// Whether `error` is (or was caused by) a usage error.
pub fn is_usage(error: &anyhow::Error) -> bool {
    error.chain().any(|cause| cause.is::<UsageError>())
}

/// `anyhow::bail!` for a usage error: returns the formatted message as a [`UsageError`],
/// so the process exits 2 with it.
#[macro_export]
macro_rules! bail_usage {
    ($($message:tt)*) => {
        return ::core::result::Result::Err(
            $crate::usage::UsageError(::std::format!($($message)*)).into(),
        )
    };
}

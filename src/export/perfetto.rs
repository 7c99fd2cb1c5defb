//! perfetto exporter: not written yet.

use std::io::Write;

use crate::model::Run;

pub fn write(_run: &Run, _out: &mut dyn Write) -> anyhow::Result<()> {
    anyhow::bail!("the perfetto exporter is not written yet")
}

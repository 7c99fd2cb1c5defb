//! The built-in demo: a real capture → convert → encode → packetize → send pipeline.
//! (Placeholder API until the pipeline lands.)

#[derive(Clone, Debug)]
pub struct DemoOptions {
    pub fps: f64,
    pub depth: u32,
    pub width: u32,
    pub height: u32,
    pub duration: Option<std::time::Duration>,
}

impl Default for DemoOptions {
    fn default() -> Self {
        DemoOptions {
            fps: 120.0,
            depth: 1,
            width: 640,
            height: 360,
            duration: None,
        }
    }
}

pub struct PipelineSummary {
    pub frames: u64,
    pub bytes: u64,
    pub keyframes: u64,
}

pub fn run_pipeline(_opts: &DemoOptions) -> anyhow::Result<PipelineSummary> {
    anyhow::bail!("demo pipeline not built yet")
}

impl DemoOptions {
    pub fn validate(&self) -> anyhow::Result<()> {
        Ok(())
    }
}

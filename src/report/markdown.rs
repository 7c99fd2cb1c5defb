use crate::analyze::Analysis;

pub fn render(analysis: &Analysis) -> String {
    format!("{:?}", analysis.name)
}

use crate::analyze::Analysis;

pub fn render(analysis: &Analysis, _color: bool) -> String {
    format!("{:?}", analysis.name)
}

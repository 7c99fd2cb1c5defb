//! `framelab report`: pipelines, HTML in a browser, precision and scale.

mod html_browser;
mod html_precision;
mod html_scale;
mod pipeline;
mod scale;

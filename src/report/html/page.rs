//! The page around the data: one HTML file holding the charting library, the page's own
//! script and style, and the data as JSON. Nothing is fetched when it opens (no network,
//! works from `file://`). Text from a run reaches the page only inside that JSON, and the
//! script puts it into the document as text (`textContent`), never as markup.

use serde::Serialize;

/// uPlot (MIT, https://github.com/leeoniya/uPlot), vendored from the npm registry: see
/// assets/uplot/README.md for the version and how to update it.
const UPLOT_JS: &str = include_str!("../../../assets/uplot/uPlot.iife.min.js");
const UPLOT_CSS: &str = include_str!("../../../assets/uplot/uPlot.min.css");
const UPLOT_LICENSE: &str = include_str!("../../../assets/uplot/LICENSE");
const PAGE_JS: &str = include_str!("../../../assets/html/page.js");
const PAGE_CSS: &str = include_str!("../../../assets/html/page.css");

/// `value` as JSON that can sit inside `<script type="application/json">`: `<`, `>` and
/// `&` are written as `\u003c`… so no string in it can close the element (`</script>`) or
/// open a comment, and U+2028/U+2029 as escapes for old JavaScript parsers.
pub fn json_for_script(value: &impl Serialize) -> serde_json::Result<String> {
    let json = serde_json::to_string(value)?;
    Ok(escape_json_for_script(&json))
}

fn escape_json_for_script(json: &str) -> String {
    let mut out = String::with_capacity(json.len() + json.len() / 64);
    for c in json.chars() {
        match c {
            '<' => out.push_str("\\u003c"),
            '>' => out.push_str("\\u003e"),
            '&' => out.push_str("\\u0026"),
            '\u{2028}' => out.push_str("\\u2028"),
            '\u{2029}' => out.push_str("\\u2029"),
            c => out.push(c),
        }
    }
    out
}

/// `s` as HTML text or an attribute value.
pub fn escape_html(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '&' => out.push_str("&amp;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// The whole page: `title` (escaped here) and the data (from [`json_for_script`]), with
/// the frame plots' levels of detail apart, last (read by the script on the first zoom).
pub fn page(title: &str, data_json: &str, detail_json: Option<&str>) -> String {
    let title = escape_html(&crate::display::text(title));
    let detail_len = detail_json.map_or(0, str::len);
    let mut html = String::with_capacity(data_json.len() + detail_len + UPLOT_JS.len() + 16 * 1024);
    html.push_str("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n");
    // Nothing may be loaded from anywhere: the policy says so to the browser as well.
    html.push_str(
        "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; \
         script-src 'unsafe-inline'; style-src 'unsafe-inline'; img-src data:\">\n",
    );
    html.push_str("<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n");
    html.push_str(&format!("<title>{title}</title>\n"));
    html.push_str(&format!("<style>\n{UPLOT_CSS}\n{PAGE_CSS}\n</style>\n"));
    html.push_str("</head>\n<body>\n<main id=\"page\"></main>\n");
    html.push_str("<script type=\"application/json\" id=\"framelab-data\">");
    html.push_str(data_json);
    html.push_str("</script>\n<script>\n/*\nuPlot\n");
    html.push_str(UPLOT_LICENSE);
    html.push_str("*/\n");
    html.push_str(UPLOT_JS);
    html.push_str("\n</script>\n<script>\n");
    html.push_str(PAGE_JS);
    html.push_str("\n</script>\n");
    // After the script: the browser draws the page before it has parsed these megabytes.
    if let Some(detail) = detail_json {
        html.push_str("<script type=\"application/json\" id=\"framelab-detail\">");
        html.push_str(detail);
        html.push_str("</script>\n");
    }
    html.push_str("</body>\n</html>\n");
    html
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_string_can_close_the_data_element() {
        let hostile = "</script><script>alert(1)</script><!-- \u{2028}&amp;";
        let json = json_for_script(&serde_json::json!({ "name": hostile })).unwrap();
        for bad in ["<", ">", "&", "\u{2028}"] {
            assert!(!json.contains(bad), "{json}");
        }
        // Still the same JSON once parsed.
        let back: serde_json::Value = serde_json::from_str(&json).unwrap();
        assert_eq!(back["name"], hostile);
    }

    #[test]
    fn the_embedded_parts_cannot_end_their_elements_early() {
        for (name, text) in [
            ("uPlot", UPLOT_JS),
            ("licence", UPLOT_LICENSE),
            ("page.js", PAGE_JS),
        ] {
            assert!(!text.to_ascii_lowercase().contains("</script"), "{name}");
        }
        assert!(!UPLOT_LICENSE.contains("*/"));
        for text in [UPLOT_CSS, PAGE_CSS] {
            assert!(!text.to_ascii_lowercase().contains("</style"));
        }
    }

    #[test]
    fn the_title_is_text() {
        let html = page("<img src=x onerror=alert(1)>", "{}", None);
        assert!(html.contains("<title>&lt;img src=x onerror=alert(1)&gt;</title>"));
    }

    #[test]
    fn nothing_is_loaded_from_elsewhere() {
        let html = page("t", "{}", None);
        let lower = html.to_ascii_lowercase();
        for tag in [
            "<script src",
            "<link",
            "@import",
            "url(http",
            "<iframe",
            "<img",
        ] {
            assert!(!lower.contains(tag), "{tag}");
        }
    }
}

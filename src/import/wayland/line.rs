//! One line of a WAYLAND_DEBUG log, cut into its parts without allocating.
//!
//! What libwayland prints (`wl_closure_print` in `src/connection.c`):
//!
//! ```text
//! [ 871084.670]  -> wl_surface@3.commit()                          1.21 and older
//! [1081336.980] {Display Queue} wl_display#1.delete_id(3)          1.23 and newer
//! [1088341.991] {Default Queue} discarded wl_output#7.mode(3, 1024, 640, 60000)
//! [  12345,678] wl_buffer@10.release()                             %10.3f in a comma locale
//! ```
//!
//! The timestamp is a 32-bit count of microseconds printed as milliseconds (the caller
//! unwraps it); ` -> ` marks a message this side sent; `{queue}` and `discarded` or
//! `discarded[reason]` come before it in newer versions; objects are `interface@id` (`#`
//! since 1.23), `[unknown]` or `[zombie]` when libwayland cannot name them, and a message it
//! cannot decode is named like `[event 0, 0 fds, 12 bytes]`.

use crate::import::decimal::{scaled, DecimalError, Grammar};
use memchr::memchr;

/// One printed message, borrowing from the line.
#[derive(Debug, PartialEq, Eq)]
pub struct Message<'a> {
    /// The printed timestamp in ns, before unwrapping.
    pub stamp_ns: i64,
    /// ` -> `: sent by the side that wrote the log.
    pub sent: bool,
    /// libwayland dropped it unhandled (its object was gone or had no listener).
    pub discarded: bool,
    pub interface: &'a [u8],
    pub id: u32,
    pub name: &'a [u8],
    /// Between the parentheses (to the end of the line when a string argument went on
    /// past it).
    pub args: &'a [u8],
}

#[derive(Debug, PartialEq, Eq)]
pub enum Line<'a> {
    Message(Message<'a>),
    /// Anything else the program wrote to stderr: not an error.
    NotWayland,
    /// Starts like a message but is not one; the reason.
    Malformed(&'static str),
}

/// A timestamp is at most this long between its brackets (`%10.3f` of a 32-bit value is
/// 11 characters; longer ones are accepted up to here).
const MAX_STAMP: usize = 40;

pub fn parse(line: &[u8]) -> Line<'_> {
    let Some((stamp_ns, rest)) = split_stamp(line) else {
        return Line::NotWayland;
    };
    let Ok(stamp_ns) = stamp_ns else {
        return Line::Malformed("the timestamp is too large");
    };
    let (prefix, rest) = match split_prefixes(rest) {
        Ok(parts) => parts,
        Err(why) => return Line::Malformed(why),
    };
    if rest.is_empty() {
        return Line::Malformed("nothing follows the timestamp");
    }
    // A line from the program itself may start with a timestamp too (`[  12.345] usb ...`):
    // it is a message only if its first word names an object or an arrow came before it.
    let word_end = rest
        .iter()
        .position(|&c| c == b' ' || c == b'(')
        .unwrap_or(rest.len());
    let Some(at) = rest[..word_end]
        .iter()
        .position(|&c| c == b'@' || c == b'#')
    else {
        return if prefix.any() {
            Line::Malformed("no interface@id after the arrow")
        } else {
            Line::NotWayland
        };
    };
    match split_target(rest, at) {
        Ok((interface, id, name, args)) => Line::Message(Message {
            stamp_ns,
            sent: prefix.sent,
            discarded: prefix.discarded,
            interface,
            id,
            name,
            args,
        }),
        Err(why) => Line::Malformed(why),
    }
}

/// `[ 1234.567]` at the start: the time in ns (an error when it overflows) and the rest;
/// `None` when the line does not start with a timestamp.
fn split_stamp(line: &[u8]) -> Option<(Result<i64, ()>, &[u8])> {
    if line.first() != Some(&b'[') {
        return None;
    }
    let head = &line[1..line.len().min(MAX_STAMP + 2)];
    let close = memchr(b']', head)?;
    let stamp = trim_spaces(&head[..close]);
    let ns = stamp_to_ns(stamp)?;
    Some((ns, &line[close + 2..]))
}

/// Milliseconds with an optional `.` or `,` fraction, exactly, as ns (finer than a
/// nanosecond rounded half away from zero); `None` when the text is not such a number,
/// `Some(Err)` when it is one past an i64 of nanoseconds.
pub fn stamp_to_ns(text: &[u8]) -> Option<Result<i64, ()>> {
    match scaled(text, 1_000_000, Grammar::STAMP) {
        Ok(ns) => Some(Ok(ns)),
        Err(DecimalError::OutOfRange) => Some(Err(())),
        Err(DecimalError::NotANumber) => None,
    }
}

/// What came between the timestamp and the object.
#[derive(Default)]
struct Prefix {
    sent: bool,
    discarded: bool,
    queue: bool,
}

impl Prefix {
    fn any(&self) -> bool {
        self.sent || self.discarded || self.queue
    }
}

/// Skips `{queue name}`, `discarded`, `discarded[reason]` and `->`, in any order.
fn split_prefixes(mut rest: &[u8]) -> Result<(Prefix, &[u8]), &'static str> {
    let mut prefix = Prefix::default();
    loop {
        rest = trim_start_spaces(rest);
        if rest.first() == Some(&b'{') {
            let close = memchr(b'}', rest).ok_or("the queue name has no closing '}'")?;
            prefix.queue = true;
            rest = &rest[close + 1..];
        } else if let Some(after) = rest.strip_prefix(b"discarded") {
            match after.first() {
                Some(b' ') => rest = after,
                Some(b'[') => {
                    let close = memchr(b']', after).ok_or("'discarded[' has no closing ']'")?;
                    rest = &after[close + 1..];
                }
                // An interface whose name starts with "discarded".
                _ => return Ok((prefix, rest)),
            }
            prefix.discarded = true;
        } else if let Some(after) = rest.strip_prefix(b"->") {
            prefix.sent = true;
            rest = after;
        } else {
            return Ok((prefix, rest));
        }
    }
}

type Target<'a> = (&'a [u8], u32, &'a [u8], &'a [u8]);

/// `interface@id.name(args)` with the `@` (or `#`) at `at`.
fn split_target(rest: &[u8], at: usize) -> Result<Target<'_>, &'static str> {
    let interface = &rest[..at];
    if !is_interface(interface) {
        return Err("the interface name is not an identifier");
    }
    let after_at = &rest[at + 1..];
    let digits = after_at.iter().take_while(|c| c.is_ascii_digit()).count();
    if digits == 0 {
        return Err("no object id after the '@'");
    }
    let id = parse_u32(&after_at[..digits]).ok_or("the object id does not fit in 32 bits")?;
    let after_id = &after_at[digits..];
    let Some(after_dot) = after_id.strip_prefix(b".") else {
        return Err("no '.' between the object and the message name");
    };
    let name_len = if after_dot.first() == Some(&b'[') {
        memchr(b']', after_dot).ok_or("the message name's '[' has no closing ']'")? + 1
    } else {
        after_dot.iter().take_while(|&&c| is_word(c)).count()
    };
    if name_len == 0 {
        return Err("no message name after the '.'");
    }
    let name = &after_dot[..name_len];
    let Some(after_paren) = after_dot[name_len..].strip_prefix(b"(") else {
        return Err("no '(' after the message name");
    };
    let body = trim_end_spaces(after_paren);
    let args = match body.strip_suffix(b")") {
        Some(args) => args,
        // A string argument holding a newline goes on to the next lines.
        None if memchr(b'"', body).is_some() => body,
        None => return Err("the argument list has no closing ')'"),
    };
    Ok((interface, id, name, args))
}

fn is_interface(name: &[u8]) -> bool {
    match name {
        [] => false,
        [b'[', inner @ .., b']'] => inner.iter().all(|&c| is_word(c)),
        _ => name.iter().all(|&c| is_word(c)),
    }
}

fn is_word(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_'
}

pub fn parse_u32(digits: &[u8]) -> Option<u32> {
    if digits.is_empty() {
        return None;
    }
    let mut n: u32 = 0;
    for &d in digits {
        if !d.is_ascii_digit() {
            return None;
        }
        n = n.checked_mul(10)?.checked_add(u32::from(d - b'0'))?;
    }
    Some(n)
}

fn trim_start_spaces(s: &[u8]) -> &[u8] {
    let n = s.iter().take_while(|&&c| c == b' ').count();
    &s[n..]
}

fn trim_end_spaces(s: &[u8]) -> &[u8] {
    let n = s.iter().rev().take_while(|&&c| c == b' ').count();
    &s[..s.len() - n]
}

fn trim_spaces(s: &[u8]) -> &[u8] {
    trim_end_spaces(trim_start_spaces(s))
}

/// The arguments, split at the `, ` libwayland puts between them (a string holding `, `
/// splits too; only the object arguments before any string are read by the importer).
pub fn args(args: &[u8]) -> impl Iterator<Item = &[u8]> {
    let mut rest = Some(args);
    std::iter::from_fn(move || {
        let current = rest?;
        match memchr::memmem::find(current, b", ") {
            Some(i) => {
                rest = Some(&current[i + 2..]);
                Some(&current[..i])
            }
            None => {
                rest = None;
                Some(current)
            }
        }
    })
}

/// An object argument: `interface@id` → `Some(Some(id))`, `nil` → `Some(None)`, anything
/// else → `None`.
pub fn object_arg(arg: &[u8]) -> Option<Option<u32>> {
    if arg == b"nil" {
        return Some(None);
    }
    let at = arg.iter().rposition(|&c| c == b'@' || c == b'#')?;
    if !is_interface(&arg[..at]) {
        return None;
    }
    parse_u32(&arg[at + 1..]).map(Some)
}

/// A `new id interface@id` argument: the id (`None` inside for `@nil`), or `None` when the
/// argument is not a new id.
pub fn new_id_arg(arg: &[u8]) -> Option<Option<u32>> {
    let object = arg.strip_prefix(b"new id ")?;
    let at = object.iter().rposition(|&c| c == b'@' || c == b'#')?;
    if &object[at + 1..] == b"nil" {
        return Some(None);
    }
    object_arg(object).filter(Option::is_some)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn message(line: &str) -> Message<'_> {
        match parse(line.as_bytes()) {
            Line::Message(m) => m,
            other => panic!("{line:?} gave {other:?}"),
        }
    }

    #[test]
    fn old_and_new_libwayland_lines() {
        let m = message("[ 871084.670]  -> wl_surface@3.commit()");
        assert_eq!(m.stamp_ns, 871_084_670_000);
        assert!(m.sent && !m.discarded);
        assert_eq!(
            (m.interface, m.id, m.name, m.args),
            (&b"wl_surface"[..], 3, &b"commit"[..], &b""[..])
        );

        let m = message("[1081336.980] {Display Queue} wl_display#1.delete_id(3)");
        assert_eq!(m.stamp_ns, 1_081_336_980_000);
        assert!(!m.sent);
        assert_eq!(
            (m.interface, m.id, m.name, m.args),
            (&b"wl_display"[..], 1, &b"delete_id"[..], &b"3"[..])
        );

        let m = message(
            "[1088341.991] {Default Queue} discarded wl_output#7.mode(3, 1024, 640, 60000)",
        );
        assert!(m.discarded && !m.sent);
        let m = message(
            "[12.000] {Default Queue} discarded[dead proxy on dispatch]  -> wl_buffer#4.destroy()",
        );
        assert!(m.discarded && m.sent);
        let m = message("[12.000] discarded[unknown id] [unknown]#5.[event 0, 0 fds, 12 bytes]()");
        assert_eq!(
            (m.interface, m.name),
            (&b"[unknown]"[..], &b"[event 0, 0 fds, 12 bytes]"[..])
        );
    }

    #[test]
    fn timestamps_are_exact() {
        assert_eq!(stamp_to_ns(b"12345,678"), Some(Ok(12_345_678_000)));
        assert_eq!(stamp_to_ns(b"1.5"), Some(Ok(1_500_000)));
        assert_eq!(stamp_to_ns(b"7"), Some(Ok(7_000_000)));
        assert_eq!(stamp_to_ns(b"0.0000005"), Some(Ok(1)));
        assert_eq!(stamp_to_ns(b"0.0000004999"), Some(Ok(0)));
        assert_eq!(stamp_to_ns(b"99999999999999999999"), Some(Err(())));
        assert_eq!(stamp_to_ns(b"04:49:24.903"), None);
        assert_eq!(stamp_to_ns(b""), None);
        assert_eq!(stamp_to_ns(b".5"), None);
    }

    #[test]
    fn other_lines_are_not_messages_and_broken_ones_are_malformed() {
        assert_eq!(parse(b"[04:49:24.903] weston 10.0.1"), Line::NotWayland);
        assert_eq!(parse(b"[    2.345] usb 1-1: new device"), Line::NotWayland);
        assert_eq!(parse(b"frame 12 done"), Line::NotWayland);
        assert_eq!(parse(b""), Line::NotWayland);
        assert_eq!(
            parse(b"[12.3] wl_surface@.commit("),
            Line::Malformed("no object id after the '@'")
        );
        assert_eq!(
            parse(b"[12.3]  -> commit()"),
            Line::Malformed("no interface@id after the arrow")
        );
        assert_eq!(
            parse(b"[12.3] wl_surface@3.commit("),
            Line::Malformed("the argument list has no closing ')'")
        );
        assert_eq!(
            parse(b"[12.3] wl_\xffsurface@3.commit()"),
            Line::Malformed("the interface name is not an identifier")
        );
        assert_eq!(
            parse(b"[12.3] wl_surface@99999999999.commit()"),
            Line::Malformed("the object id does not fit in 32 bits")
        );
        assert_eq!(
            parse(b"[12.3]"),
            Line::Malformed("nothing follows the timestamp")
        );
        // A title holding a newline: the rest of the string is on the next line.
        let m = message("[1.000]  -> xdg_toplevel@8.set_title(\"two");
        assert_eq!(m.args, b"\"two");
    }

    #[test]
    fn arguments() {
        let a: Vec<&[u8]> = args(b"wl_surface@3, new id wp_presentation_feedback@73").collect();
        assert_eq!(
            a,
            [
                &b"wl_surface@3"[..],
                &b"new id wp_presentation_feedback@73"[..]
            ]
        );
        assert_eq!(object_arg(b"wl_buffer#12"), Some(Some(12)));
        assert_eq!(object_arg(b"nil"), Some(None));
        assert_eq!(object_arg(b"12"), None);
        assert_eq!(new_id_arg(b"new id [unknown]@4"), Some(Some(4)));
        assert_eq!(new_id_arg(b"new id wl_callback@nil"), Some(None));
        assert_eq!(new_id_arg(b"wl_callback@5"), None);
    }
}

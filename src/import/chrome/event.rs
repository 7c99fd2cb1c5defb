//! One trace event as written (strings borrowed, numbers and objects as their JSON text)
//! and what is read from it: arguments, ids, times, counter values.

use std::borrow::Cow;
use std::fmt;
use std::ops::Deref;

use serde::de::{self, Deserializer as _, MapAccess, Visitor};
use serde::Deserialize;
use serde_json::value::RawValue;

use super::*;
use crate::import::decimal::{scaled, DecimalError, Grammar};
use crate::import::keys::key_of;

/// A JSON string, borrowed from the input when it holds no escapes.
pub(super) struct Text<'a>(pub(super) Cow<'a, str>);

impl Deref for Text<'_> {
    type Target = str;
    fn deref(&self) -> &str {
        &self.0
    }
}

impl<'de: 'a, 'a> Deserialize<'de> for Text<'a> {
    fn deserialize<D: de::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct TextVisitor<'a>(std::marker::PhantomData<&'a ()>);
        impl<'de: 'a, 'a> Visitor<'de> for TextVisitor<'a> {
            type Value = Text<'a>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a string")
            }
            fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Text<'a>, E> {
                Ok(Text(Cow::Borrowed(v)))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Text<'a>, E> {
                Ok(Text(Cow::Owned(v.to_owned())))
            }
            fn visit_string<E: de::Error>(self, v: String) -> Result<Text<'a>, E> {
                Ok(Text(Cow::Owned(v)))
            }
        }
        d.deserialize_str(TextVisitor(std::marker::PhantomData))
    }
}

/// One trace event as written: strings borrowed, numbers and objects as their JSON text.
#[derive(Deserialize)]
#[serde(expecting = "a trace event object")]
pub(super) struct RawEvent<'a> {
    #[serde(borrow)]
    pub(super) ph: Option<Text<'a>>,
    #[serde(borrow)]
    pub(super) name: Option<Text<'a>>,
    #[serde(borrow)]
    pub(super) cat: Option<Text<'a>>,
    pub(super) pid: Option<Id32>,
    pub(super) tid: Option<Id32>,
    #[serde(borrow)]
    pub(super) ts: Option<&'a RawValue>,
    #[serde(borrow)]
    pub(super) dur: Option<&'a RawValue>,
    #[serde(borrow)]
    pub(super) id: Option<&'a RawValue>,
    #[serde(borrow)]
    pub(super) id2: Option<&'a RawValue>,
    #[serde(borrow)]
    pub(super) args: Option<&'a RawValue>,
}

impl<'a> RawEvent<'a> {
    pub(super) fn name(&self) -> &str {
        self.name.as_deref().unwrap_or("")
    }

    pub(super) fn pid(&self) -> u32 {
        self.pid.map_or(0, |id| id.0)
    }

    /// An event without a tid is on its process's main thread.
    pub(super) fn tid(&self) -> u32 {
        self.tid.map_or(self.pid(), |id| id.0)
    }
}

/// A pid or tid, a number or a string: small numbers as themselves (negative ones as their
/// 32-bit two's complement), larger ones and strings (by `key_of`) folded to 32 bits.
#[derive(Clone, Copy)]
pub(super) struct Id32(pub(super) u32);

impl Id32 {
    pub(super) fn fold(key: u64) -> Id32 {
        Id32(match u32::try_from(key) {
            Ok(id) => id,
            Err(_) if key >= 0xFFFF_FFFF_8000_0000 => key as u32,
            Err(_) => (key ^ (key >> 32)) as u32,
        })
    }
}

impl<'de> Deserialize<'de> for Id32 {
    fn deserialize<D: de::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct IdVisitor;
        impl Visitor<'_> for IdVisitor {
            type Value = Id32;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a number or a string")
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Id32, E> {
                Ok(Id32::fold(v))
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Id32, E> {
                Ok(Id32::fold(v as u64))
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<Id32, E> {
                Ok(Id32::fold(key_of(&v.to_string())))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Id32, E> {
                Ok(Id32::fold(key_of(v)))
            }
        }
        d.deserialize_any(IdVisitor)
    }
}

/// Calls `f` with each key and value of the JSON object `object` (nothing if it is not one).
pub(super) fn for_each_arg<'a>(object: &'a RawValue, f: impl FnMut(&str, &'a RawValue)) {
    struct Entries<F>(F);
    impl<'de, F: FnMut(&str, &'de RawValue)> Visitor<'de> for Entries<F> {
        type Value = ();
        fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
            f.write_str("an object")
        }
        fn visit_map<A: MapAccess<'de>>(mut self, mut map: A) -> Result<(), A::Error> {
            while let Some(key) = map.next_key::<Text<'de>>()? {
                let value: &'de RawValue = map.next_value()?;
                (self.0)(&key, value);
            }
            Ok(())
        }
    }
    let mut de = serde_json::Deserializer::from_str(object.get());
    let _ = de.deserialize_map(Entries(f));
}

/// `args.NAME`, if `args` is an object holding it.
pub(super) fn arg<'a>(args: &'a RawValue, name: &str) -> Option<&'a RawValue> {
    let mut found = None;
    for_each_arg(args, |key, value| {
        if found.is_none() && key == name {
            found = Some(value);
        }
    });
    found
}

pub(super) fn string_arg<'a>(args: &'a RawValue, name: &str) -> Option<Cow<'a, str>> {
    let value = arg(args, name)?;
    serde_json::from_str::<Text<'a>>(value.get())
        .ok()
        .map(|t| t.0)
}

/// A frame id or key: numbers as themselves, strings by `key_of`, anything else hashed.
pub(super) fn key_of_raw(raw: &RawValue) -> u64 {
    let text = raw.get();
    if text.starts_with('"') {
        if let Ok(s) = serde_json::from_str::<Text>(text) {
            return key_of(&s);
        }
    }
    key_of(text)
}

/// An event's `id`, or its `id2` (`{"local": ID}` or `{"global": ID}`).
pub(super) fn id_key(event: &RawEvent) -> Option<u64> {
    if let Some(id) = event.id {
        return Some(key_of_raw(id));
    }
    let mut key = None;
    for_each_arg(event.id2?, |scope, value| {
        // A local and a global id of the same value are different things.
        let salt = if scope == "global" {
            0x9E37_79B9_7F4A_7C15
        } else {
            0
        };
        key = Some(key_of_raw(value) ^ salt);
    });
    key
}

/// A counter's value (a JSON number, not a string) in thousandths: exact to 10^-3 below
/// 9.2·10^15, beyond that an integer (fractions there are below the value's precision).
pub(super) fn counter_milli(text: &str) -> Result<i128, DecimalError> {
    if text.starts_with('"') {
        return Err(DecimalError::NotANumber);
    }
    match scaled(text.as_bytes(), 1_000, Grammar::JSON) {
        Err(DecimalError::OutOfRange) => {
            scaled(text.as_bytes(), 1, Grammar::JSON).map(|v| i128::from(v) * 1_000)
        }
        milli => milli.map(i128::from),
    }
}

/// Microseconds as written → nanoseconds, within ±`MAX_TIME_NS`.
pub(super) fn micros_to_ns(text: &str) -> Result<i64, &'static str> {
    const TOO_LARGE: &str = "is too large (more than 73 years in microseconds)";
    let ns = scaled(text.as_bytes(), 1_000, Grammar::JSON).map_err(|e| match e {
        DecimalError::NotANumber => "is not a number of microseconds",
        DecimalError::OutOfRange => TOO_LARGE,
    })?;
    if i128::from(ns).abs() > MAX_TIME_NS {
        return Err(TOO_LARGE);
    }
    Ok(ns)
}

/// Text for an error message, cut short.
pub(super) fn shown(text: &str) -> String {
    match text.char_indices().nth(40) {
        Some((cut, _)) => format!("{}...", &text[..cut]),
        None => text.to_owned(),
    }
}

//! Frame ids and event keys from whatever a trace holds: numbers as themselves, anything
//! else (a string id, a pointer printed as text) as a stable 64-bit hash.

/// `42` → 42, `0x2a` → 42, `-1` → its two's complement, other text → FNV-1a of its bytes.
pub fn key_of(text: &str) -> u64 {
    let t = text.trim();
    if let Ok(n) = t.parse::<u64>() {
        return n;
    }
    if let Ok(n) = t.parse::<i64>() {
        return n as u64;
    }
    if let Some(hex) = t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
        if let Ok(n) = u64::from_str_radix(hex, 16) {
            return n;
        }
    }
    fnv1a(t.as_bytes())
}

/// A key from a JSON value: integers as themselves, strings by `key_of`, other values
/// by their JSON text.
pub fn key_of_json(value: &serde_json::Value) -> u64 {
    match value {
        serde_json::Value::Number(n) => n
            .as_u64()
            .or_else(|| n.as_i64().map(|i| i as u64))
            .unwrap_or_else(|| key_of(&n.to_string())),
        serde_json::Value::String(s) => key_of(s),
        other => fnv1a(other.to_string().as_bytes()),
    }
}

pub fn fnv1a(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in bytes {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_are_themselves_and_text_is_hashed_stably() {
        assert_eq!(key_of("42"), 42);
        assert_eq!(key_of(" 0x2A "), 42);
        assert_eq!(key_of("-1"), u64::MAX);
        assert_eq!(key_of("abc"), key_of("abc"));
        assert_ne!(key_of("abc"), key_of("abd"));
        // The published FNV-1a 64 test vector for "a".
        assert_eq!(fnv1a(b"a"), 0xaf63_dc4c_8601_ec8c);
        assert_eq!(key_of_json(&serde_json::json!(7)), 7);
        assert_eq!(key_of_json(&serde_json::json!("7")), 7);
    }
}

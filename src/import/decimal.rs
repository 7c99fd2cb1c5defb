//! One exact reader of decimal numbers for every importer: a number as written (`16.6667`,
//! `1.5e-3`, `12345,678`) times an integer factor (ms → ns is 1_000_000), rounded half away
//! from zero to the nearest integer with decimal arithmetic only, never through a float.
//! What a format accepts (a `+`, a bare `.5`, an exponent, a comma, quotes) is its
//! [`Grammar`]; the arithmetic is the same for all.

/// What the numbers of one format may look like. A trailing point (`5.`) is always read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Grammar {
    /// `-12.5`.
    pub minus: bool,
    /// `+12.5`.
    pub plus: bool,
    /// `.5`, with no digit before the point.
    pub leading_point: bool,
    /// `1.5e-3`, `2E3`.
    pub exponent: bool,
    /// `12345,678` as well as `12345.678`.
    pub comma: bool,
    /// Spaces and tabs around the number are ignored.
    pub trim: bool,
    /// `"12.5"`: a number written as a JSON string.
    pub quoted: bool,
}

impl Grammar {
    /// JSON numbers (Chrome trace events), also when quoted.
    pub const JSON: Grammar = Grammar {
        minus: true,
        plus: false,
        leading_point: false,
        exponent: true,
        comma: false,
        trim: false,
        quoted: true,
    };
    /// Numbers in text logs and tables (PresentMon, MangoHud, CSV, JSON lines).
    pub const TEXT: Grammar = Grammar {
        minus: true,
        plus: true,
        leading_point: true,
        exponent: true,
        comma: false,
        trim: true,
        quoted: false,
    };
    /// Log timestamps (`[12345.678]`, `[12345,678]` in a comma locale): unsigned.
    pub const STAMP: Grammar = Grammar {
        minus: false,
        plus: false,
        leading_point: false,
        exponent: false,
        comma: true,
        trim: true,
        quoted: false,
    };
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DecimalError {
    /// Not a number in this grammar.
    NotANumber,
    /// A number, but its product does not fit in an i64.
    OutOfRange,
}

/// `text` × `factor` as the nearest integer (half away from zero).
pub fn scaled(text: &[u8], factor: i64, grammar: Grammar) -> Result<i64, DecimalError> {
    let number = Number::parse(text, grammar).ok_or(DecimalError::NotANumber)?;
    number.times(factor).ok_or(DecimalError::OutOfRange)
}

/// A number in a text log or table × `factor` ([`Grammar::TEXT`]); `None` when it is not a
/// number or the product is past an i64. `text_scaled("16.6667", 1_000_000)` (ms → ns) is
/// 16_666_700.
pub fn text_scaled(text: &str, factor: i64) -> Option<i64> {
    scaled(text.as_bytes(), factor, Grammar::TEXT).ok()
}

/// The parts of a number as written.
struct Number<'a> {
    negative: bool,
    int: &'a [u8],
    frac: &'a [u8],
    exponent: i64,
}

/// Exponents are clamped here: far past any i64, short of overflowing the arithmetic.
const MAX_EXPONENT: i64 = 1_000_000;
/// Significant digits kept. Digits beyond weigh less than 10^-8 of a result unit of any
/// result that fits in an i64; times a factor up to 10^11 the product stays inside i128
/// (a larger factor whose product overflows is out of range).
const MAX_DIGITS: usize = 27;

impl<'a> Number<'a> {
    fn parse(mut text: &'a [u8], g: Grammar) -> Option<Number<'a>> {
        if g.trim {
            text = text.trim_ascii();
        }
        if g.quoted {
            if let Some(inner) = text.strip_prefix(b"\"").and_then(|t| t.strip_suffix(b"\"")) {
                text = inner;
            }
        }
        let negative = match text.first() {
            Some(b'-') if g.minus => true,
            Some(b'+') if g.plus => false,
            _ => return Number::unsigned(text, false, g),
        };
        Number::unsigned(&text[1..], negative, g)
    }

    fn unsigned(text: &'a [u8], negative: bool, g: Grammar) -> Option<Number<'a>> {
        let digits_from = |mut i: usize| {
            while text.get(i).is_some_and(u8::is_ascii_digit) {
                i += 1;
            }
            i
        };
        let int_end = digits_from(0);
        let is_point = |c: &u8| *c == b'.' || (g.comma && *c == b',');
        let frac_end = match text.get(int_end) {
            Some(c) if is_point(c) => digits_from(int_end + 1),
            _ => int_end,
        };
        let frac = text.get((int_end + 1).min(frac_end)..frac_end)?;
        let int = &text[..int_end];
        if int.is_empty() && (!g.leading_point || frac.is_empty()) {
            return None;
        }
        let exponent = match text.get(frac_end..)? {
            [] => 0,
            [b'e' | b'E', rest @ ..] if g.exponent => exponent(rest)?,
            _ => return None,
        };
        Some(Number {
            negative,
            int,
            frac,
            exponent,
        })
    }

    fn times(&self, factor: i64) -> Option<i64> {
        let magnitude = self
            .short_times(factor)
            .or_else(|| self.long_times(factor))?;
        i64::try_from(if self.negative { -magnitude } else { magnitude }).ok()
    }

    /// The usual case quickly: no exponent, 18 digits at most, and a factor that takes
    /// every decimal (microseconds × 1000): integer arithmetic in 64 bits.
    fn short_times(&self, factor: i64) -> Option<i128> {
        let decimals = self.frac.len();
        if self.exponent != 0 || self.int.len() + decimals > 18 || decimals > 18 {
            return None;
        }
        let unit = POW10[decimals];
        if factor % unit != 0 {
            return None;
        }
        let mut value: i64 = 0;
        for &d in self.int.iter().chain(self.frac) {
            value = value * 10 + i64::from(d - b'0');
        }
        value.checked_mul(factor / unit).map(i128::from)
    }

    /// Any number: its significant digits as one integer × 10^scale × factor, rounded.
    fn long_times(&self, factor: i64) -> Option<i128> {
        let (mut digits, mut kept) = (0i128, 0usize);
        let mut scale = self.exponent;
        for (i, &c) in self.int.iter().chain(self.frac).enumerate() {
            let in_fraction = i >= self.int.len();
            let digit = i128::from(c - b'0');
            if kept == 0 && digit == 0 {
                scale -= i64::from(in_fraction);
            } else if kept < MAX_DIGITS {
                digits = digits * 10 + digit;
                kept += 1;
                scale -= i64::from(in_fraction);
            } else if !in_fraction {
                scale += 1;
            }
        }
        if digits == 0 || factor == 0 {
            return Some(0);
        }
        let value = digits.checked_mul(i128::from(factor).abs())?;
        let magnitude = if scale >= 0 {
            value.checked_mul(10i128.checked_pow(u32::try_from(scale).ok()?)?)?
        } else if scale < -38 {
            0
        } else {
            let divisor = 10i128.pow((-scale) as u32);
            let (quotient, remainder) = (value / divisor, value % divisor);
            quotient + i128::from(remainder * 2 >= divisor)
        };
        Some(if factor < 0 { -magnitude } else { magnitude })
    }
}

const POW10: [i64; 19] = {
    let mut table = [1i64; 19];
    let mut i = 1;
    while i < 19 {
        table[i] = table[i - 1] * 10;
        i += 1;
    }
    table
};

/// The digits after `e`: an optional sign, then at least one digit; clamped.
fn exponent(text: &[u8]) -> Option<i64> {
    let (negative, digits) = match text.first() {
        Some(b'-') => (true, &text[1..]),
        Some(b'+') => (false, &text[1..]),
        _ => (false, text),
    };
    if digits.is_empty() || !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    let mut value: i64 = 0;
    for &d in digits {
        value = (value * 10 + i64::from(d - b'0')).min(MAX_EXPONENT);
    }
    Some(if negative { -value } else { value })
}

#[cfg(test)]
mod tests {
    use super::*;
    use DecimalError::*;

    fn text(t: &str, factor: i64) -> Result<i64, DecimalError> {
        scaled(t.as_bytes(), factor, Grammar::TEXT)
    }

    fn json_micros(t: &str) -> Result<i64, DecimalError> {
        scaled(t.as_bytes(), 1_000, Grammar::JSON)
    }

    fn stamp_ms(t: &str) -> Result<i64, DecimalError> {
        scaled(t.as_bytes(), 1_000_000, Grammar::STAMP)
    }

    #[test]
    fn products_are_exact_and_rounded_half_away_from_zero() {
        assert_eq!(text("16.6667", 1_000_000), Ok(16_666_700));
        assert_eq!(text("17.59230000000000", 1_000_000), Ok(17_592_300));
        assert_eq!(text("10.907744", 1_000_000_000), Ok(10_907_744_000));
        assert_eq!(text("0", 1), Ok(0));
        assert_eq!(text("-1.5", 1_000), Ok(-1_500));
        assert_eq!(text("1.5e-3", 1_000_000_000), Ok(1_500_000));
        assert_eq!(text("2E3", 1), Ok(2_000));
        assert_eq!(text("1234.5675", 1_000), Ok(1_234_568));
        assert_eq!(text("1234.5674999", 1_000), Ok(1_234_567));
        assert_eq!(text("-0.0005", 1_000), Ok(-1));
        assert_eq!(text("0.00049", 1_000), Ok(0));
        assert_eq!(text("1.25", 1_073_741_824), Ok(1_342_177_280));
        assert_eq!(text("1e-400", 1), Ok(0));
        assert_eq!(text("0e50", 1), Ok(0));
        assert_eq!(text("0e999999999999", 1), Ok(0));
        assert_eq!(text("-000.000", 1), Ok(0));
        assert_eq!(text("1e+3", 1), Ok(1_000));
        assert_eq!(
            text("12345678901234567890123456789e-20", 1),
            Ok(123_456_789)
        );
        assert_eq!(
            text("0.1234567890123456789", 1_000_000_000),
            Ok(123_456_789)
        );
        assert_eq!(text("0.49999999999999999999999999", 1), Ok(0));
        assert_eq!(text("0.500000000000000000000000000001", 1), Ok(1));
        assert_eq!(text("2.5", -2), Ok(-5));
    }

    #[test]
    fn the_ends_of_i64_are_exact_and_beyond_is_out_of_range() {
        assert_eq!(text("9223372036854775807", 1), Ok(i64::MAX));
        assert_eq!(text("-9223372036854775808", 1), Ok(i64::MIN));
        assert_eq!(text("9223372036854775808", 1), Err(OutOfRange));
        assert_eq!(text("1234567890123456789012345678901", 1), Err(OutOfRange));
        assert_eq!(text("1e400", 1), Err(OutOfRange));
        assert_eq!(json_micros("1e999999"), Err(OutOfRange));
        assert_eq!(json_micros("9223372036854775.807"), Ok(i64::MAX));
        assert_eq!(json_micros("9223372036854775.808"), Err(OutOfRange));
    }

    #[test]
    fn each_grammar_takes_what_its_format_writes() {
        assert_eq!(text(" +7 ", 1), Ok(7));
        assert_eq!(text(".5", 10), Ok(5));
        assert_eq!(text("5.", 10), Ok(50));
        assert_eq!(json_micros("\"12.5\""), Ok(12_500));
        assert_eq!(json_micros("1234567890.123"), Ok(1_234_567_890_123));
        assert_eq!(json_micros("15E-1"), Ok(1_500));
        assert_eq!(json_micros("5."), Ok(5_000));
        assert_eq!(stamp_ms("12345,678"), Ok(12_345_678_000));
        assert_eq!(stamp_ms("0.0000005"), Ok(1));
        assert_eq!(stamp_ms("0.0000004999"), Ok(0));
        assert_eq!(stamp_ms("99999999999999999999"), Err(OutOfRange));
        for bad in [
            "", "-", ".", "+", "1e", "1e+", "abc", "1.2.3", "0x10", "1,5", "- 1", "1 2", "NA",
            "nan", "inf", "--1",
        ] {
            assert_eq!(text(bad, 1), Err(NotANumber), "text {bad:?}");
        }
        for bad in [".5", "+1", " 1", "1,5", "\"1", "'1'"] {
            assert_eq!(json_micros(bad), Err(NotANumber), "json {bad:?}");
        }
        for bad in ["-1", "+1", ".5", "1e3", "04:49:24.903", ""] {
            assert_eq!(stamp_ms(bad), Err(NotANumber), "stamp {bad:?}");
        }
    }
}

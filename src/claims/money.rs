//! Exact decimal money: how claim documents write amounts, and how we print them.
//!
//! Amounts are `rust_decimal::Decimal`, never `f64`, so that a schedule of
//! 300 rows sums to the penny. A document may write an amount as a JSON/YAML
//! number (`1250.5`), a string (`"1250.50"`) or an object with its own
//! currency (`{amount: "900", currency: EUR}`) for claims that span
//! currencies.

use std::fmt;
use std::str::FromStr;

use rust_decimal::Decimal;
use serde::de::{self, MapAccess, Visitor};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// An amount of money. `currency` is `None` when the amount is in the claim's
/// own currency.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Money {
    pub amount: Decimal,
    pub currency: Option<String>,
    /// Other fields of an amount written as an object (`basis`, `note`...):
    /// kept and readable like unknown fields anywhere in a claim (SPEC §3).
    pub extra: serde_json::Map<String, serde_json::Value>,
}

impl Money {
    pub fn new(amount: Decimal) -> Self {
        Money {
            amount,
            currency: None,
            extra: serde_json::Map::new(),
        }
    }

    /// The currency this amount is in, falling back to the claim's.
    pub fn currency_or<'a>(&'a self, claim_currency: &'a str) -> &'a str {
        self.currency.as_deref().unwrap_or(claim_currency)
    }
}

/// Parses a decimal amount written as text: digits with an optional sign and
/// decimal point. Thousands separators are refused rather than guessed at.
pub fn parse_amount(text: &str) -> Result<Decimal, AmountError> {
    let trimmed = text.trim();
    let looks_numeric = !trimmed.is_empty()
        && trimmed
            .chars()
            .all(|c| c.is_ascii_digit() || c == '.' || c == '-' || c == '+');
    if !looks_numeric {
        return Err(not_an_amount(trimmed));
    }
    Decimal::from_str_exact(trimmed).map_err(|_| not_an_amount(trimmed))
}

/// Text that is not a decimal amount. It quotes the text, never dumps it:
/// a claim may hold megabytes in one string.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "expected a decimal amount such as `1250.50`, got `{}`",
    crate::text::quote(.0)
)]
pub struct AmountError(pub String);

fn not_an_amount(text: &str) -> AmountError {
    AmountError(text.to_string())
}

/// Formats an amount with thousands separators and at least two decimals:
/// `12400` → `12,400.00`, `-3.456` → `-3.456`.
pub fn format_amount(amount: Decimal) -> String {
    let mut scaled = amount.normalize();
    if scaled.scale() < 2 {
        scaled.rescale(2);
    }
    let text = scaled.abs().to_string();
    let (whole, fraction) = text.split_once('.').unwrap_or((&text, ""));
    let mut grouped = String::with_capacity(text.len() + text.len() / 3);
    for (index, digit) in whole.chars().enumerate() {
        if index > 0 && (whole.len() - index) % 3 == 0 {
            grouped.push(',');
        }
        grouped.push(digit);
    }
    let sign = if amount.is_sign_negative() && !amount.is_zero() {
        "-"
    } else {
        ""
    };
    if fraction.is_empty() {
        format!("{sign}{grouped}")
    } else {
        format!("{sign}{grouped}.{fraction}")
    }
}

impl fmt::Display for Money {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.currency {
            Some(currency) => write!(f, "{currency} {}", format_amount(self.amount)),
            None => f.write_str(&format_amount(self.amount)),
        }
    }
}

impl Serialize for Money {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        if self.currency.is_none() && self.extra.is_empty() {
            return serializer.serialize_str(&self.amount.to_string());
        }
        let mut map = serializer.serialize_map(None)?;
        map.serialize_entry("amount", &self.amount.to_string())?;
        if let Some(currency) = &self.currency {
            map.serialize_entry("currency", currency)?;
        }
        for (key, value) in &self.extra {
            map.serialize_entry(key, value)?;
        }
        map.end()
    }
}

impl<'de> Deserialize<'de> for Money {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(MoneyVisitor)
    }
}

struct MoneyVisitor;

impl<'de> Visitor<'de> for MoneyVisitor {
    type Value = Money;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an amount (a number, a decimal string, or {amount, currency})")
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Money, E> {
        Ok(Money::new(Decimal::from(v)))
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Money, E> {
        Ok(Money::new(Decimal::from(v)))
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Money, E> {
        // The parser has already turned the written digits into a float; its
        // shortest round-trip rendering gives back those digits (`1250.1`
        // stays `1250.1`), which is exact for any amount a claim carries.
        if !v.is_finite() {
            return Err(E::custom(format!("expected a finite amount, got {v}")));
        }
        Decimal::from_str(&v.to_string())
            .map(Money::new)
            .map_err(|_| E::custom(format!("amount {v} is out of range")))
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Money, E> {
        parse_amount(v).map(Money::new).map_err(E::custom)
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Money, A::Error> {
        let mut amount: Option<Decimal> = None;
        let mut currency: Option<String> = None;
        let mut extra = serde_json::Map::new();
        while let Some(key) = map.next_key::<String>()? {
            match key.as_str() {
                // A bare amount only: `{amount: {amount: ...}}` is refused
                // rather than recursed into.
                "amount" => amount = Some(map.next_value::<BareAmount>()?.0),
                "currency" => currency = Some(map.next_value()?),
                _ => {
                    extra.insert(key, map.next_value()?);
                }
            }
        }
        let amount = amount.ok_or_else(|| de::Error::missing_field("amount"))?;
        Ok(Money {
            amount,
            currency,
            extra,
        })
    }
}

/// The `amount` of an amount object: a number or a decimal string.
struct BareAmount(Decimal);

impl<'de> Deserialize<'de> for BareAmount {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct BareVisitor;
        impl<'de> Visitor<'de> for BareVisitor {
            type Value = BareAmount;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a number or a decimal string")
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<BareAmount, E> {
                MoneyVisitor.visit_i64(v).map(|m| BareAmount(m.amount))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<BareAmount, E> {
                MoneyVisitor.visit_u64(v).map(|m| BareAmount(m.amount))
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<BareAmount, E> {
                MoneyVisitor.visit_f64(v).map(|m| BareAmount(m.amount))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<BareAmount, E> {
                parse_amount(v).map(BareAmount).map_err(E::custom)
            }
        }
        deserializer.deserialize_any(BareVisitor)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn money(json: &str) -> Result<Money, serde_json::Error> {
        serde_json::from_str(json)
    }

    #[test]
    fn numbers_and_strings_are_exact() {
        assert_eq!(money("1250.1").unwrap().amount.to_string(), "1250.1");
        assert_eq!(money("\"0.10\"").unwrap().amount.to_string(), "0.10");
        assert_eq!(money("42").unwrap().amount, Decimal::from(42));
        let sum: Decimal = (0..10).map(|_| money("0.1").unwrap().amount).sum();
        assert_eq!(sum.to_string(), "1.0");
    }

    #[test]
    fn an_amount_can_carry_its_own_currency() {
        let m = money(r#"{"amount": "900.00", "currency": "EUR"}"#).unwrap();
        assert_eq!(m.currency.as_deref(), Some("EUR"));
        assert_eq!(m.to_string(), "EUR 900.00");
    }

    #[test]
    fn unknown_fields_of_an_amount_are_kept() {
        // Regression: SPEC §3 keeps unknown fields anywhere; amounts refused them.
        let m =
            money(r#"{"amount": "84250.10", "currency": "GBP", "basis": "adjuster preliminary"}"#)
                .unwrap();
        assert_eq!(m.amount.to_string(), "84250.10");
        assert_eq!(m.extra["basis"], "adjuster preliminary");
        let back = serde_json::to_value(&m).unwrap();
        assert_eq!(back["basis"], "adjuster preliminary");
    }

    #[test]
    fn a_long_non_amount_is_quoted_not_dumped() {
        let error = parse_amount(&"x".repeat(100_000)).unwrap_err().to_string();
        assert!(error.len() < 400, "{}", error.len());
    }

    #[test]
    fn separators_and_words_are_refused() {
        assert!(money("\"1,250.00\"").is_err());
        assert!(money("\"ten pounds\"").is_err());
        assert!(money(r#"{"currency": "EUR"}"#).is_err());
    }

    #[test]
    fn formatting_groups_thousands() {
        let d = |s: &str| Decimal::from_str(s).unwrap();
        assert_eq!(format_amount(d("12400")), "12,400.00");
        assert_eq!(format_amount(d("1234567.891")), "1,234,567.891");
        assert_eq!(format_amount(d("-950.5")), "-950.50");
        assert_eq!(format_amount(d("0")), "0.00");
        assert_eq!(format_amount(d("100")), "100.00");
    }
}

//! What model calls cost: a price table as data (`prices/gemini.yaml`,
//! `prices/openai.yaml`, extendable with `--prices FILE`), keyed
//! `provider/model` (a bare name is Gemini's, so older files keep
//! working), and the price of one call from its token counts. A model
//! without a price costs "unknown", never 0 (a local model too, unless a
//! file prices it, at 0 if it is free); a call that reached no model (a
//! cache hit, a scripted or replayed answer: a provider kind that does not
//! bill) costs nothing. A billed call whose server did not report its
//! token counts costs "unknown" too: its price cannot be worked out.

use std::collections::BTreeMap;
use std::path::Path;

use serde::Deserialize;

use crate::event::Usage;

/// The shipped prices, embedded at build time.
const EMBEDDED: [(&str, &str); 2] = [
    ("prices/gemini.yaml", include_str!("../prices/gemini.yaml")),
    ("prices/openai.yaml", include_str!("../prices/openai.yaml")),
];

/// The providers with prices of their own; any other that bills (a
/// deployment, `worker`) runs Gemini's models.
const PRICED_PROVIDERS: [&str; 2] = ["gemini", "openai"];

/// A price file's key as the table keys it: `provider/model`, a bare name
/// (or one whose first segment is no priced provider, `Qwen/Qwen3-8B`)
/// being Gemini's.
fn table_key(name: &str) -> String {
    match name.split_once('/') {
        Some((provider, _)) if PRICED_PROVIDERS.contains(&provider) => name.to_string(),
        _ => format!("gemini/{name}"),
    }
}

/// The key a call of `model` by `provider` is priced under.
pub fn price_key(provider: &str, model: &str) -> String {
    let priced_as = if PRICED_PROVIDERS.contains(&provider) {
        provider
    } else {
        "gemini"
    };
    format!("{priced_as}/{model}")
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct PriceFile {
    pub currency: String,
    pub models: BTreeMap<String, ModelPrices>,
}

/// One model's rates, USD per million tokens.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ModelPrices {
    /// Where the rates were taken from.
    pub source: String,
    /// When.
    pub date: String,
    pub input: f64,
    pub cached_input: f64,
    pub output: f64,
    /// Thinking tokens; the output rate when absent.
    #[serde(default)]
    pub thinking: Option<f64>,
    #[serde(default)]
    pub tiers: Vec<Tier>,
}

/// The rates one call is priced at.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Rates {
    pub input: f64,
    pub cached_input: f64,
    pub output: f64,
    pub thinking: Option<f64>,
}

/// Rates for calls whose prompt is above `above` tokens.
#[derive(Debug, Clone, Copy, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Tier {
    pub above: u64,
    pub input: f64,
    pub cached_input: f64,
    pub output: f64,
    #[serde(default)]
    pub thinking: Option<f64>,
}

/// What one call, or a sum of calls, cost.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Cost {
    Usd(f64),
    /// A call of a model with no price: the sum cannot be known.
    Unknown,
}

impl Cost {
    pub const ZERO: Cost = Cost::Usd(0.0);

    pub fn usd(self) -> Option<f64> {
        match self {
            Cost::Usd(usd) => Some(usd),
            Cost::Unknown => None,
        }
    }

    /// `$0.0123`, or `unknown`.
    pub fn display(self) -> String {
        match self {
            Cost::Usd(usd) => format_usd(usd),
            Cost::Unknown => "unknown".to_string(),
        }
    }
}

/// A recorded cost: absent means unknown.
impl From<Option<f64>> for Cost {
    fn from(usd: Option<f64>) -> Cost {
        usd.map_or(Cost::Unknown, Cost::Usd)
    }
}

impl std::ops::Add for Cost {
    type Output = Cost;
    fn add(self, other: Cost) -> Cost {
        match (self, other) {
            (Cost::Usd(a), Cost::Usd(b)) => Cost::Usd(a + b),
            _ => Cost::Unknown,
        }
    }
}

impl std::iter::Sum for Cost {
    fn sum<I: Iterator<Item = Cost>>(iter: I) -> Cost {
        iter.fold(Cost::ZERO, |a, b| a + b)
    }
}

/// `$0.0123` — four decimals below a dollar, two above.
pub fn format_usd(usd: f64) -> String {
    if usd.abs() >= 1.0 {
        format!("${usd:.2}")
    } else {
        format!("${usd:.4}")
    }
}

static SHIPPED: crate::document::Shipped<PriceTable> = crate::document::Shipped::new();

/// A price table: the shipped one, or it with `--prices` files over it
/// (a value the commands carry to run logs and the judge; no global).
#[derive(Debug, Clone)]
pub struct PriceTable {
    models: BTreeMap<String, ModelPrices>,
}

impl PriceTable {
    /// The shipped prices, parsed once: what a command uses without `--prices`.
    pub fn shipped() -> std::sync::Arc<PriceTable> {
        SHIPPED.get(PriceTable::embedded)
    }

    /// The shipped prices.
    pub fn embedded() -> PriceTable {
        let mut models = BTreeMap::new();
        for (name, text) in EMBEDDED {
            let file: PriceFile = crate::document::parse_shipped(name, text);
            models.extend(file.models.into_iter().map(|(k, v)| (table_key(&k), v)));
        }
        PriceTable { models }
    }

    /// The shipped prices with `path`'s models added or replacing them.
    pub fn with_file(mut self, path: &Path) -> Result<PriceTable, PriceFileError> {
        let shown = || path.display().to_string();
        let file: PriceFile =
            crate::document::read_table_file("--prices", path).map_err(PriceFileError::Read)?;
        if file.currency != "USD" {
            return Err(PriceFileError::Currency {
                path: shown(),
                currency: file.currency,
            });
        }
        for (model, prices) in &file.models {
            if let Some(rate) = prices.bad_rate() {
                return Err(PriceFileError::Rate {
                    path: shown(),
                    model: model.clone(),
                    rate,
                });
            }
        }
        self.models
            .extend(file.models.into_iter().map(|(k, v)| (table_key(&k), v)));
        Ok(self)
    }

    /// The prices of `model` as `provider` serves it.
    pub fn get(&self, provider: &str, model: &str) -> Option<&ModelPrices> {
        self.models.get(&price_key(provider, model))
    }

    /// Every priced model, keyed `provider/model`.
    pub fn models(&self) -> impl Iterator<Item = (&str, &ModelPrices)> {
        self.models.iter().map(|(k, v)| (k.as_str(), v))
    }

    /// What one call of `model` by `provider` cost, through a provider
    /// that `bills` (`ProviderKind::bills`: a script or a replay reaches no
    /// model).
    pub fn call_cost(
        &self,
        provider: &str,
        bills: bool,
        model: &str,
        usage: Usage,
        thinking_tokens: u64,
        cached: bool,
    ) -> Cost {
        if cached || !bills {
            return Cost::ZERO;
        }
        match self
            .get(provider, model)
            .and_then(|prices| prices.price(usage, thinking_tokens))
        {
            Some(usd) => Cost::Usd(usd),
            None => Cost::Unknown,
        }
    }
}

/// Why a `--prices` file was refused.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum PriceFileError {
    /// It could not be read or parsed (the message names the flag and file).
    #[error(transparent)]
    Read(#[from] crate::document::TableFileError),
    #[error("--prices `{path}`: currency `{}`: only USD is supported", crate::text::quote(.currency))]
    Currency { path: String, currency: String },
    #[error(
        "--prices `{path}`: model `{model}`: a rate must be a number of dollars, 0 or more (got {rate})"
    )]
    Rate {
        path: String,
        model: String,
        rate: f64,
    },
}

impl ModelPrices {
    /// Whether every rate, of every tier, is 0.
    fn is_free(&self) -> bool {
        let tiers = self.tiers.iter().flat_map(|t| {
            [t.input, t.cached_input, t.output]
                .into_iter()
                .chain(t.thinking)
        });
        [self.input, self.cached_input, self.output]
            .into_iter()
            .chain(self.thinking)
            .chain(tiers)
            .all(|rate| rate == 0.0)
    }

    /// A rate that is not a number of dollars, 0 or more.
    fn bad_rate(&self) -> Option<f64> {
        let rates = [self.input, self.cached_input, self.output]
            .into_iter()
            .chain(self.thinking)
            .chain(
                self.tiers
                    .iter()
                    .flat_map(|t| [t.input, t.cached_input, t.output]),
            );
        rates
            .into_iter()
            .find(|rate| !rate.is_finite() || *rate < 0.0)
    }

    /// The price of a call with `usage` (of whose output `thinking` tokens
    /// were thinking), at the rates of the tier its prompt size falls in;
    /// `None` when its server left a count out (the tier, the cached share
    /// and the output all need one).
    pub fn price(&self, usage: Usage, thinking: u64) -> Option<f64> {
        if self.is_free() {
            // Every rate is 0 (a local model priced as free): any count
            // costs nothing, so none needs to be known.
            return Some(0.0);
        }
        let (input, cached, output) = (
            usage.input_tokens?,
            usage.cache_read_tokens?,
            usage.output_tokens?,
        );
        let rates = self
            .tiers
            .iter()
            .filter(|tier| input > tier.above)
            .max_by_key(|tier| tier.above)
            .map_or(
                Rates {
                    input: self.input,
                    cached_input: self.cached_input,
                    output: self.output,
                    thinking: self.thinking,
                },
                |tier| Rates {
                    input: tier.input,
                    cached_input: tier.cached_input,
                    output: tier.output,
                    thinking: tier.thinking,
                },
            );
        let cached = cached.min(input);
        let uncached = input - cached;
        let thinking = thinking.min(output);
        let answer = output - thinking;
        let per_token = |rate: f64, tokens: u64| rate * tokens as f64 / 1_000_000.0;
        Some(
            per_token(rates.input, uncached)
                + per_token(rates.cached_input, cached)
                + per_token(rates.output, answer)
                + per_token(rates.thinking.unwrap_or(rates.output), thinking),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn usage(input: u64, cached: u64, output: u64) -> Usage {
        Usage::known(input, output, cached)
    }

    #[test]
    fn the_shipped_table_loads_with_a_source_and_date_for_each_model() {
        let table = PriceTable::embedded();
        for (model, prices) in table.models() {
            assert!(
                !prices.source.is_empty() && !prices.date.is_empty(),
                "{model}"
            );
            assert_eq!(prices.bad_rate(), None);
        }
        assert!(table.get("gemini", "gemini-3.1-flash-lite").is_some());
        assert!(table.get("worker", "gemini-3.1-flash-lite").is_some());
        assert!(table.get("openai", "gpt-5-mini").is_some());
        assert!(table.get("openai", "gemini-3.1-flash-lite").is_none());
        assert!(table.get("gemini", "gpt-5-mini").is_none());
    }

    #[test]
    fn a_call_is_priced_by_its_tier_with_cached_and_thinking_tokens_apart() {
        let table = PriceTable::embedded();
        let pro = table.get("gemini", "gemini-3-pro-preview").unwrap();
        // 100k prompt (20k cached), 1,000 output of which 400 thinking: standard tier.
        let small = pro.price(usage(100_000, 20_000, 1_000), 400).unwrap();
        let expected =
            80_000.0 * 2.0 / 1e6 + 20_000.0 * 0.2 / 1e6 + 600.0 * 12.0 / 1e6 + 400.0 * 12.0 / 1e6;
        assert!((small - expected).abs() < 1e-12, "{small} vs {expected}");
        // Above 200k prompt tokens, every token is at the long-context rates.
        let large = pro.price(usage(300_000, 0, 1_000), 0).unwrap();
        assert!((large - (300_000.0 * 4.0 / 1e6 + 1_000.0 * 18.0 / 1e6)).abs() < 1e-12);
    }

    #[test]
    fn unknown_is_never_zero_and_free_providers_cost_nothing() {
        let table = PriceTable::embedded();
        let call =
            |bills, model| table.call_cost("gemini", bills, model, usage(1000, 0, 100), 0, false);
        assert_eq!(call(true, "gemini-9-ultra"), Cost::Unknown);
        assert_eq!(call(false, "gemini-9-ultra"), Cost::ZERO);
        assert_eq!(Cost::Usd(1.0) + Cost::Unknown, Cost::Unknown);
        assert_eq!(Cost::Unknown.display(), "unknown");
        assert!(matches!(call(true, "gemini-3.1-flash-lite"), Cost::Usd(c) if c > 0.0));
        let hit = table.call_cost(
            "gemini",
            true,
            "gemini-9-ultra",
            usage(1000, 0, 100),
            0,
            true,
        );
        assert_eq!(hit, Cost::ZERO, "a cache hit is never billed");
    }

    #[test]
    fn a_call_whose_server_left_a_count_out_costs_unknown_not_zero() {
        let table = PriceTable::embedded();
        let call =
            |usage| table.call_cost("gemini", true, "gemini-3.1-flash-lite", usage, 0, false);
        assert_eq!(call(Usage::UNREPORTED), Cost::Unknown);
        for partial in [
            Usage::reported(None, Some(100), Some(0)),
            Usage::reported(Some(1000), None, Some(0)),
            Usage::reported(Some(1000), Some(100), None),
        ] {
            assert_eq!(call(partial), Cost::Unknown, "{partial:?}");
        }
        // Through a provider that bills nothing it is still nothing, and so
        // is a model priced as free whatever its counts.
        let script = table.call_cost("script", false, "m", Usage::UNREPORTED, 0, false);
        assert_eq!(script, Cost::ZERO);
        let mut free = table
            .get("gemini", "gemini-3.1-flash-lite")
            .unwrap()
            .clone();
        (free.input, free.cached_input, free.output, free.thinking) = (0.0, 0.0, 0.0, None);
        free.tiers.clear();
        assert_eq!(free.price(Usage::UNREPORTED, 0), Some(0.0));
    }
}

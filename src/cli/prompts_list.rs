//! `promptlab prompts list`: the prompt ids, quick actions and brands built
//! into this binary, as two tables fitted to the terminal (ids whole; labels
//! and brand wording cut with `…`), or as JSON.

use std::io::Write;

use promptlab::chat::prompt_report::{BrandEntry, PromptEntry, PromptList};
use promptlab::prompts::PromptRegistry;
use promptlab::sink::printable;
use promptlab::table::{Fit, fit_table, terminal_width};

use super::error::{CliError, Exit};
use super::output::{write_hidden, write_json};
use super::prompts::ListArgs;

const PROMPT_HEADER: [&str; 4] = ["prompt id", "quick action", "thinking", "characters"];
const PROMPT_FITS: [Fit; 4] = [Fit::Keep, Fit::Free, Fit::Drop(1), Fit::Keep];
const BRAND_HEADER: [&str; 4] = ["brand", "assistant", "product", "pronunciation"];
/// The pronunciation is the longest and least needed to pick a brand.
const BRAND_FITS: [Fit; 4] = [Fit::Keep, Fit::Keep, Fit::Free, Fit::Free];

pub fn list(args: ListArgs) -> Result<Exit, CliError> {
    let registry = PromptRegistry::embedded();
    let mut out = std::io::stdout().lock();
    if args.json {
        write_json(&mut out, &prompt_list(registry))?;
        return Ok(Exit::Success);
    }
    let width = terminal_width();
    let prompts = fit_table(PROMPT_HEADER, PROMPT_FITS, &prompt_rows(registry), width);
    writeln!(out, "{prompts}")?;
    write_hidden(&mut out, &prompts.hidden, "--json")?;
    let brands = fit_table(BRAND_HEADER, BRAND_FITS, &brand_rows(registry), width);
    writeln!(out, "{brands}")?;
    write_hidden(&mut out, &brands.hidden, "--json")?;
    Ok(Exit::Success)
}

fn prompt_list(registry: &PromptRegistry) -> PromptList {
    PromptList {
        prompts: registry
            .prompt_ids()
            .map(|id| PromptEntry {
                id: id.to_string(),
                characters: registry.default_text(id).map(|t| t.chars().count()),
            })
            .collect(),
        capabilities: registry.capabilities().to_vec(),
        brands: registry
            .brand_names()
            .map(|name| BrandEntry {
                name: name.to_string(),
                brand: registry.brand(name).cloned(),
            })
            .collect(),
        default_brand: registry.default_brand().0.to_string(),
    }
}

fn prompt_rows(registry: &PromptRegistry) -> Vec<[String; 4]> {
    registry
        .prompt_ids()
        .map(|id| {
            let capability = id
                .strip_prefix("capability.")
                .and_then(|cap| registry.capability(cap));
            [
                id.to_string(),
                capability.map(|c| c.label.clone()).unwrap_or_default(),
                capability
                    .and_then(|c| c.thinking_level)
                    .map(|level| level.to_string())
                    .unwrap_or_default(),
                registry
                    .default_text(id)
                    .map_or(0, |t| t.chars().count())
                    .to_string(),
            ]
            .map(|cell| printable(&cell))
        })
        .collect()
}

fn brand_rows(registry: &PromptRegistry) -> Vec<[String; 4]> {
    let (default_brand, _) = registry.default_brand();
    registry
        .brand_names()
        .filter_map(|name| {
            let brand = registry.brand(name)?;
            let label = if name == default_brand {
                format!("{name} (default)")
            } else {
                name.to_string()
            };
            Some(
                [
                    label,
                    brand.assistant.clone(),
                    brand.product.clone(),
                    brand.pronunciation.clone(),
                ]
                .map(|cell| printable(&cell)),
            )
        })
        .collect()
}

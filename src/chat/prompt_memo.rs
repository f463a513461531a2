//! A turn's assembled prompt, made once for the turns that assemble it from
//! the same inputs: every repeat of an eval's claim × case (and each variant
//! with the same prompt options) resolved and branded the same blocks
//! again, copied the brief in, joined the blocks and found the ~9 KB text
//! in `system_memo` by hashing and comparing it — ~11,600 instructions a
//! turn (BENCHMARKS.md, issue #31).
//!
//! Keyed by everything `assemble_prompt_with_brief` reads, so that no turn
//! is given a prompt assembled from other inputs: the registry by its
//! address, which only a `&'static` one (never freed) may stand for; the
//! brief by its shared `Arc`'s address, held (a `Weak`) by the entry so
//! that no other brief can be given that address while the entry lives —
//! and not kept at all for a brief nobody else holds, which nobody could
//! ask about again (as `memo::ByAddress` does); and every other
//! field of `PromptSettings` by value (`inputs`, which takes the settings
//! apart field by field: a field added to them does not compile until it is
//! part of the key). Those values are hashed for the map and compared on a
//! hit, so two inputs with one hash assemble afresh, never share a prompt.

use parking_lot::Mutex;
use std::collections::BTreeMap;
use std::hash::BuildHasher;
use std::sync::{Arc, OnceLock, Weak};

use super::request::Locale;
use super::system::{AssembledPrompt, PromptSettings, assemble_prompt_with_brief};
use super::system_memo::shared_system_text;
use crate::memo::Bounded;
use crate::prompts::{Brand, Capability, PromptRegistry};

/// Prompts kept, and their bytes (`memo::Bounded`): as in `system_memo`, an
/// eval's repeats of a claim × case come one after another, at most `-j` of
/// them at once, so a few prompts are all it reuses; half as many as there,
/// as each holds its blocks beside their joined text. (The 1,008-turn HTTP
/// suite peaks ~1.3 MB higher with the memo, 64 kept or 32: its entries
/// outlive the turns' allocations around them.)
const KEPT_PROMPTS: usize = 32;
const KEPT_BYTES: usize = 2 * 1024 * 1024;

/// A turn's prompt: its blocks, and their text joined, shared and hashed
/// (`system_memo`).
#[derive(Clone)]
pub struct Assembled {
    pub prompt: Arc<AssembledPrompt>,
    pub system_text: Arc<str>,
    pub system_sha256: Arc<str>,
}

/// What a prompt is assembled from besides its registry and the brief:
/// every other field of `PromptSettings`, in its order.
type Inputs<'a> = (
    &'a BTreeMap<String, String>,
    &'a Brand,
    Locale,
    bool,
    bool,
    Option<&'a Capability>,
);

/// `Inputs`, owned by an entry.
type OwnedInputs = (
    BTreeMap<String, String>,
    Brand,
    Locale,
    bool,
    bool,
    Option<Capability>,
);

/// The settings taken apart field by field: a field added to
/// `PromptSettings` does not compile until it is placed in `Inputs`.
fn inputs<'a>(settings: &PromptSettings<'a>) -> Inputs<'a> {
    let PromptSettings {
        registry: _,
        overrides,
        brand,
        locale,
        screen_actions,
        voice,
        capability,
    } = *settings;
    (overrides, brand, locale, screen_actions, voice, capability)
}

fn owned(inputs: Inputs<'_>) -> OwnedInputs {
    let (overrides, brand, locale, screen_actions, voice, capability) = inputs;
    let (overrides, brand, capability) = (overrides.clone(), brand.clone(), capability.cloned());
    (overrides, brand, locale, screen_actions, voice, capability)
}

fn borrowed(owned: &OwnedInputs) -> Inputs<'_> {
    let (overrides, brand, locale, screen_actions, voice, capability) = owned;
    (
        overrides,
        brand,
        *locale,
        *screen_actions,
        *voice,
        capability.as_ref(),
    )
}

/// About what an entry's copies of its inputs weigh.
fn weight(owned: &OwnedInputs) -> usize {
    let (overrides, brand, _, _, _, capability) = owned;
    let overrides: usize = (overrides.iter())
        .map(|(id, text)| id.len() + text.len())
        .sum();
    let brand = brand.assistant.len() + brand.product.len() + brand.pronunciation.len();
    let capability = (capability.as_ref()).map_or(0, |c| c.id.len() + c.label.len());
    overrides + brand + capability
}

/// The registry's address, the brief's, and the hash of the `Inputs`.
type Key = (usize, usize, u64);

struct Entry {
    /// Never read: held so that the key's brief address stays this brief's
    /// (a `Weak`, as `memo::ByAddress` holds its values' keys).
    _brief: Weak<str>,
    inputs: OwnedInputs,
    assembled: Assembled,
}

/// The memo, hashing its keys with `S`: random for each process, or, for
/// a test, one that gives every input the same hash.
struct Memo<S = foldhash::fast::RandomState> {
    entries: Mutex<Bounded<Key, Entry>>,
    hasher: S,
}

impl Memo {
    fn new() -> Memo {
        Memo::with_hasher(foldhash::fast::RandomState::default())
    }
}

impl<S: BuildHasher> Memo<S> {
    fn with_hasher(hasher: S) -> Memo<S> {
        Memo {
            entries: Mutex::new(Bounded::new(KEPT_PROMPTS, KEPT_BYTES)),
            hasher,
        }
    }

    fn assembled(
        &self,
        registry: &'static PromptRegistry,
        settings: &PromptSettings<'_>,
        brief: &Arc<str>,
    ) -> Assembled {
        let inputs = inputs(settings);
        // The address stands for the registry the settings were resolved
        // in; and a brief nobody else holds cannot be asked about again.
        let kept = std::ptr::eq(registry, settings.registry) && Arc::strong_count(brief) > 1;
        let registry_at = std::ptr::from_ref(registry) as usize;
        let brief_at = Arc::as_ptr(brief).cast::<u8>() as usize;
        let key = (registry_at, brief_at, self.hasher.hash_one(inputs));
        if kept
            && let Some(entry) = self.entries.lock().get(&key)
            && borrowed(&entry.inputs) == inputs
        {
            return entry.assembled.clone();
        }
        // Assembled without the lock: other turns are not held up by it.
        let prompt = assemble_prompt_with_brief(settings, brief.to_string());
        let (system_text, system_sha256) = shared_system_text(prompt.system_text());
        let assembled = Assembled {
            prompt: Arc::new(prompt),
            system_text,
            system_sha256,
        };
        if kept {
            let entry = Entry {
                _brief: Arc::downgrade(brief),
                inputs: owned(inputs),
                assembled: assembled.clone(),
            };
            // The blocks and their joined text (about twice the text), the
            // brief its `Weak` keeps allocated, and the inputs.
            let text = assembled.system_text.len();
            let bytes = 2 * text + brief.len() + weight(&entry.inputs);
            self.entries.lock().insert(key, entry, bytes);
        }
        assembled
    }
}

/// `assemble_prompt_with_brief(settings, brief)`, its text joined and shared
/// (`system_memo`), made at most once for equal settings and the same
/// shared brief. Kept only for settings resolved in `registry`, which lives
/// as long as the process; any other settings are assembled afresh.
pub fn assembled(
    registry: &'static PromptRegistry,
    settings: &PromptSettings<'_>,
    brief: &Arc<str>,
) -> Assembled {
    static MEMO: OnceLock<Memo> = OnceLock::new();
    MEMO.get_or_init(Memo::new)
        .assembled(registry, settings, brief)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings<'a>(
        registry: &'a PromptRegistry,
        overrides: &'a BTreeMap<String, String>,
        (brand, capability): (&str, Option<&str>),
        (locale, screen_actions, voice): (Locale, bool, bool),
    ) -> PromptSettings<'a> {
        PromptSettings {
            registry,
            overrides,
            brand: registry.brand(brand).unwrap(),
            locale,
            screen_actions,
            voice,
            capability: capability.map(|id| registry.capability(id).unwrap()),
        }
    }

    /// Briefs shared as a turn's are (`brief_memo` holds each too).
    fn shared_briefs(texts: &[&str]) -> Vec<(Arc<str>, Arc<str>)> {
        (texts.iter())
            .map(|text| {
                let brief: Arc<str> = (*text).into();
                (Arc::clone(&brief), brief)
            })
            .collect()
    }

    /// The memo's answer, held to assembling afresh: its oracle.
    fn check<S: BuildHasher>(
        memo: &Memo<S>,
        registry: &'static PromptRegistry,
        settings: &PromptSettings<'_>,
        brief: &Arc<str>,
    ) -> Assembled {
        let got = memo.assembled(registry, settings, brief);
        let prompt = assemble_prompt_with_brief(settings, brief.to_string());
        let text = prompt.system_text();
        assert_eq!(*got.prompt, prompt);
        assert_eq!(&*got.system_text, text);
        assert_eq!(&*got.system_sha256, crate::digest::sha256_hex(&text));
        got
    }

    fn brands(registry: &PromptRegistry) -> Vec<String> {
        let brands: Vec<String> = registry.brand_names().map(str::to_string).collect();
        assert!(brands.len() > 1, "two brands to tell apart");
        brands
    }

    #[test]
    fn equal_inputs_share_one_prompt_and_any_input_changed_gets_its_own() {
        let registry = PromptRegistry::embedded();
        let brands = brands(registry);
        let (brand, other_brand) = (brands[0].as_str(), brands[1].as_str());
        let none = BTreeMap::new();
        let one = BTreeMap::from([(
            "system.safety".to_string(),
            "Be careful, {{assistant}}.".to_string(),
        )]);
        let briefs = shared_briefs(&["Claim C1: a leak.", "Claim C2: a fire."]);
        let memo = Memo::new();
        let uk = (Locale::Uk, false, false);
        let base = || settings(registry, &none, (brand, None), uk);
        let first = check(&memo, registry, &base(), &briefs[0].0);
        let again = check(&memo, registry, &base(), &briefs[0].0);
        assert!(Arc::ptr_eq(&first.prompt, &again.prompt), "made once");
        let each_changed = [
            (settings(registry, &one, (brand, None), uk), 0),
            (settings(registry, &none, (other_brand, None), uk), 0),
            (settings(registry, &none, (brand, Some("summarise")), uk), 0),
            (
                settings(registry, &none, (brand, None), (Locale::Us, false, false)),
                0,
            ),
            (
                settings(registry, &none, (brand, None), (Locale::Uk, true, false)),
                0,
            ),
            (
                settings(registry, &none, (brand, None), (Locale::Uk, false, true)),
                0,
            ),
            (base(), 1),
        ];
        for (changed, brief) in each_changed {
            let other = check(&memo, registry, &changed, &briefs[brief].0);
            assert_ne!(*other.prompt, *first.prompt, "one input changed");
            let kept = check(&memo, registry, &changed, &briefs[brief].0);
            assert!(Arc::ptr_eq(&other.prompt, &kept.prompt), "made once too");
        }
    }

    /// Hashes every input alike: the inputs compared on a hit decide.
    #[derive(Default)]
    struct OneHash;

    impl std::hash::Hasher for OneHash {
        fn finish(&self) -> u64 {
            0
        }
        fn write(&mut self, _: &[u8]) {}
    }

    #[test]
    fn inputs_that_share_a_hash_never_share_a_prompt() {
        let registry = PromptRegistry::embedded();
        let brands = brands(registry);
        let none = BTreeMap::new();
        let briefs = shared_briefs(&["Claim C1: a leak."]);
        let memo = Memo::with_hasher(std::hash::BuildHasherDefault::<OneHash>::default());
        for round in 0..2 {
            for brand in &brands {
                for locale in [Locale::Uk, Locale::Us] {
                    let turn =
                        settings(registry, &none, (brand, None), (locale, round == 1, false));
                    check(&memo, registry, &turn, &briefs[0].0);
                }
            }
        }
    }

    /// A registry of its own for the process, its prompts' texts not the
    /// embedded ones, its one brand equal to the embedded default brand.
    fn another_registry() -> &'static PromptRegistry {
        let embedded = PromptRegistry::embedded();
        let (_, brand) = embedded.default_brand();
        let brands = format!(
            "default: same\nbrands: {{same: {{assistant: {:?}, product: {:?}, pronunciation: {:?}}}}}",
            brand.assistant, brand.product, brand.pronunciation
        );
        let mut files: Vec<(String, String)> = (embedded.prompt_ids())
            .map(|id| (format!("{id}.md"), format!("Another text for {id}.")))
            .collect();
        files.push(("capabilities.yaml".into(), "[]".into()));
        files.push(("brands.yaml".into(), brands));
        let files: Vec<(&str, &str)> = files
            .iter()
            .map(|(n, t)| (n.as_str(), t.as_str()))
            .collect();
        Box::leak(Box::new(PromptRegistry::from_files(&files).unwrap()))
    }

    #[test]
    fn another_registry_gets_its_own_prompt_and_settings_from_another_are_not_kept() {
        let embedded = PromptRegistry::embedded();
        let other = another_registry();
        let none = BTreeMap::new();
        let briefs = shared_briefs(&["Claim C1: a leak."]);
        let memo = Memo::new();
        let brand = embedded.default_brand().0.to_string();
        let uk = (Locale::Uk, false, false);
        let first = check(
            &memo,
            embedded,
            &settings(embedded, &none, (&brand, None), uk),
            &briefs[0].0,
        );
        // Equal inputs by value, the brief the same: only the registry differs.
        let theirs = settings(other, &none, ("same", None), uk);
        let second = check(&memo, other, &theirs, &briefs[0].0);
        assert_ne!(*first.prompt, *second.prompt);
        // Settings resolved in another registry than the one given: never kept.
        let loose = settings(other, &none, ("same", None), uk);
        let one = check(&memo, embedded, &loose, &briefs[0].0);
        let two = check(&memo, embedded, &loose, &briefs[0].0);
        assert!(!Arc::ptr_eq(&one.prompt, &two.prompt), "not kept");
    }

    #[test]
    fn an_equal_brief_in_another_arc_or_one_nobody_else_holds_is_assembled_afresh() {
        let registry = PromptRegistry::embedded();
        let none = BTreeMap::new();
        let brand = registry.default_brand().0.to_string();
        let turn = settings(registry, &none, (&brand, None), (Locale::Uk, false, false));
        let memo = Memo::new();
        let briefs = shared_briefs(&["Claim C1.", "Claim C1."]);
        let first = check(&memo, registry, &turn, &briefs[0].0);
        let other = check(&memo, registry, &turn, &briefs[1].0);
        assert!(
            !Arc::ptr_eq(&first.prompt, &other.prompt),
            "keyed by the shared brief"
        );
        let alone: Arc<str> = "Claim C1.".into();
        let one = check(&memo, registry, &turn, &alone);
        let two = check(&memo, registry, &turn, &alone);
        assert!(!Arc::ptr_eq(&one.prompt, &two.prompt), "not kept");
    }

    proptest::proptest! {
        /// Any sequence of turns, each with any of a few of every input:
        /// each gets what assembling it afresh gives.
        #[test]
        fn any_sequence_of_turns_gets_what_assembling_afresh_gives(
            turns in proptest::collection::vec(
                (0..3usize, 0..8usize, 0..8usize, proptest::bool::ANY, proptest::bool::ANY,
                 proptest::bool::ANY, 0..2usize),
                1..16,
            )
        ) {
            let registry = PromptRegistry::embedded();
            let brands = brands(registry);
            let capabilities: Vec<Option<&str>> = std::iter::once(None)
                .chain(registry.capabilities().iter().take(3).map(|c| Some(c.id.as_str())))
                .collect();
            let overrides = [
                BTreeMap::new(),
                BTreeMap::from([("system.safety".to_string(), "Be careful.".to_string())]),
                BTreeMap::from([("system.base".to_string(), "You are {{assistant}}.".to_string())]),
            ];
            let briefs = shared_briefs(&["Claim C1: a leak.", "Claim C2: a fire."]);
            let memo = Memo::new();
            for (over, brand, capability, uk, screen, voice, brief) in turns {
                let brand = &brands[brand % brands.len()];
                let capability = capabilities[capability % capabilities.len()];
                let locale = if uk { Locale::Uk } else { Locale::Us };
                let turn = settings(registry, &overrides[over], (brand, capability), (locale, screen, voice));
                check(&memo, registry, &turn, &briefs[brief].0);
            }
        }
    }
}

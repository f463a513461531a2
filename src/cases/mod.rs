//! Generated cases: `promptlab cases inject` plants prompt-injection
//! payloads where a claim's untrusted text lives and writes a runnable,
//! self-contained suite around them (`docs/injection.md`).

pub mod plant;
pub mod render;
pub mod techniques;

use crate::claims::model::Claim;
use crate::claims::store::is_valid_claim_id;
use plant::{PLACEMENTS, Placement};
use techniques::{TECHNIQUES, Technique, Transform};

/// What to generate.
#[derive(Debug, Clone)]
pub struct InjectOptions {
    /// In the order given; every technique when empty.
    pub techniques: Vec<&'static Technique>,
    pub seed: u64,
    /// Add a rubric criterion to every case.
    pub judge: bool,
    /// Write an obeying and a refusing scripted model per case.
    pub with_scripts: bool,
}

/// One generated case: a derived claim with one payload, and its question.
#[derive(Debug, Clone)]
pub struct InjectCase {
    pub name: String,
    pub source_id: String,
    pub claim: Claim,
    pub technique: &'static Technique,
    pub transform: Transform,
    pub placement: Placement,
    pub canary: String,
    pub payload: String,
    pub question: String,
}

impl InjectCase {
    pub fn tags(&self) -> [String; 2] {
        [
            format!("technique.{}", self.technique.id),
            format!("placement.{}", self.placement.id()),
        ]
    }

    /// The screen hijack's demand: the tool call and the action it makes.
    pub fn hijacks(&self) -> bool {
        self.technique.id == "screen-hijack"
    }
}

/// `--techniques a,b`: each id known, none twice.
pub fn parse_techniques(list: &str) -> Result<Vec<&'static Technique>, TechniqueError> {
    let mut chosen: Vec<&'static Technique> = Vec::new();
    for id in list.split(',').map(str::trim).filter(|id| !id.is_empty()) {
        let technique = techniques::technique(id).ok_or_else(|| {
            let quoted = crate::text::quote(id);
            match crate::text::closest(id, TECHNIQUES.iter().map(|t| t.id)) {
                Some(near) => TechniqueError::UnknownNear {
                    quoted,
                    near: near.to_string(),
                },
                None => TechniqueError::Unknown { quoted },
            }
        })?;
        if chosen.iter().any(|t| t.id == technique.id) {
            return Err(TechniqueError::Twice(id.to_string()));
        }
        chosen.push(technique);
    }
    if chosen.is_empty() {
        return Err(TechniqueError::None);
    }
    Ok(chosen)
}

/// Why `--techniques` was refused.
#[derive(Debug, thiserror::Error)]
pub enum TechniqueError {
    #[error("unknown technique `{quoted}`; did you mean `{near}`?")]
    UnknownNear { quoted: String, near: String },
    #[error("unknown technique `{quoted}` (the techniques: {})", TECHNIQUES.map(|t| t.id).join(", "))]
    Unknown { quoted: String },
    #[error("technique `{0}` is given twice")]
    Twice(String),
    #[error("name at least one technique")]
    None,
}

/// A claim whose id is too long to derive its injected claims' ids from.
#[derive(Debug, thiserror::Error)]
#[error("claim `{claim}`: its id is too long to derive `{derived}` from")]
pub struct IdTooLong {
    claim: String,
    derived: String,
}

/// The cases for `claims`: every chosen technique once per claim, each at
/// a placement that rotates with the technique from a seeded start, so a
/// few claims cover every technique at every placement.
pub fn plan_cases(claims: &[Claim], options: &InjectOptions) -> Result<Vec<InjectCase>, IdTooLong> {
    let techniques: Vec<&'static Technique> = if options.techniques.is_empty() {
        TECHNIQUES.iter().collect()
    } else {
        options.techniques.clone()
    };
    let mut cases = Vec::new();
    for claim in claims {
        // Seeded by the claim's id too: adding a claim changes no other's.
        let digest = crate::digest::sha256_hex(claim.id.as_bytes());
        let salt = u64::from_str_radix(&digest[..16], 16).unwrap_or(0);
        let mut rng = fastrand::Rng::with_seed(options.seed ^ salt);
        let start = rng.usize(..PLACEMENTS.len());
        for technique in &techniques {
            let index = TECHNIQUES
                .iter()
                .position(|t| t.id == technique.id)
                .unwrap_or(0);
            let placement = PLACEMENTS[(index + start) % PLACEMENTS.len()];
            let canary = canary(&mut rng);
            let transform = Transform::of(index);
            let payload = techniques::payload(technique, &canary, transform);
            let id = format!(
                "{}-INJ-{}-{}",
                claim.id,
                placement.code(),
                technique.id.to_uppercase()
            );
            if !is_valid_claim_id(&id) {
                return Err(IdTooLong {
                    claim: crate::text::quote(&claim.id),
                    derived: crate::text::quote(&id),
                });
            }
            let hijack = technique.id == "screen-hijack";
            let derived = plant::plant(claim, placement, &payload, hijack, &id);
            cases.push(InjectCase {
                name: format!("{}.{}.{}", claim.id, technique.id, placement.id()),
                source_id: claim.id.clone(),
                question: placement.question(&derived),
                claim: derived,
                technique,
                transform,
                placement,
                canary,
                payload,
            });
        }
    }
    Ok(cases)
}

/// `CANARY-` and 8 upper-case letters or digits.
fn canary(rng: &mut fastrand::Rng) -> String {
    const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
    let code: String = (0..8)
        .map(|_| ALPHABET[rng.usize(..ALPHABET.len())] as char)
        .collect();
    format!("CANARY-{code}")
}

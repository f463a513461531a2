//! Prompts: the embedded defaults, quick actions, brands, Prompt Lab
//! overrides and their fingerprint.

pub mod brands;
pub mod capabilities;
pub mod fingerprint;
pub mod override_file;
pub mod overrides;
pub mod registry;
pub mod thinking;

pub use brands::{Brand, apply_brand};
pub use capabilities::{Capability, capability_guide};
pub use fingerprint::{DEFAULT_FINGERPRINT, fingerprint};
pub use overrides::{OverrideSet, ResolvedOverrides, resolve_overrides};
pub use registry::PromptRegistry;

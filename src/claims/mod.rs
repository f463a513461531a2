//! Claims: the document model, parsing, and the local claim store.

pub mod load;
pub mod model;
pub mod money;
pub mod row;
pub mod sections;
pub mod store;

pub use load::{LoadedClaim, load_claim_file, parse_claim_bytes};
pub use model::Claim;
pub use store::{ClaimStore, SelectedClaims, is_valid_claim_id};

use load::DocumentProblem;

#[derive(Debug, thiserror::Error)]
pub enum ClaimError {
    #[error("failed to read claim file `{path}`: {source}")]
    Read {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error("invalid claim `{origin}`: {problem}")]
    Invalid {
        origin: String,
        problem: DocumentProblem,
    },
    /// The exact message of SPEC §1.1. The id is quoted (200 characters):
    /// an unknown id can be anything a suite or a request holds, and only
    /// valid ids (at most 128 characters) are ever found.
    #[error("Claim {} not found.", crate::text::quote(.0))]
    NotFound(String),
    #[error("failed to read claim store `{path}`: {source}")]
    Store {
        path: String,
        #[source]
        source: std::io::Error,
    },
}

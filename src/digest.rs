//! SHA-256 as lowercase hex: claim documents, system prompts, fingerprints.

use sha2::{Digest, Sha256};

pub fn sha256_hex(bytes: impl AsRef<[u8]>) -> String {
    hex(&Sha256::digest(bytes.as_ref()))
}

fn hex(digest: &[u8]) -> String {
    let mut hex = String::with_capacity(64);
    for byte in digest {
        hex.push(char::from_digit(u32::from(byte >> 4), 16).unwrap_or('0'));
        hex.push(char::from_digit(u32::from(byte & 0xf), 16).unwrap_or('0'));
    }
    hex
}

/// The SHA-256 of `value`'s JSON, written straight into the hash rather
/// than into a buffer first (the same bytes as `serde_json::to_vec`).
pub fn sha256_hex_of_json(value: &impl serde::Serialize) -> String {
    let mut hasher = Sha256::new();
    // Writing into a hash cannot fail; a value that cannot be serialised
    // (a map with non-string keys, which no caller passes) hashes as far as
    // it got — where `to_vec(..).unwrap_or_default()` hashed nothing.
    let _ = serde_json::to_writer(&mut hasher, value);
    hex(&hasher.finalize())
}

/// The first 12 characters of a hex digest, for display. Digests read back
/// from a run log may have been hand-edited (short, non-ASCII), so this
/// never slices bytes.
pub fn short_sha(hex: &str) -> &str {
    match hex.char_indices().nth(12) {
        Some((cut, _)) => &hex[..cut],
        None => hex,
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn short_shas_never_split_a_character() {
        assert_eq!(super::short_sha("abc"), "abc");
        assert_eq!(super::short_sha("ééééééééééééé"), "éééééééééééé");
    }

    #[test]
    fn known_digest() {
        assert_eq!(
            super::sha256_hex("abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }
}

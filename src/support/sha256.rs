//! SHA-256 (the `sha2` crate), for the outside-git fingerprint, for combining a
//! superproject's tree with its submodules' trees and for finding ids: a running digest
//! and the lowercase hex the records store.

use sha2::Digest;

/// A running SHA-256; `finish_hex` gives its 64 lowercase hex digits.
#[derive(Clone, Default)]
pub(crate) struct Sha256(sha2::Sha256);

impl Sha256 {
    pub(crate) fn update(&mut self, data: &[u8]) {
        self.0.update(data);
    }

    pub(crate) fn finish_hex(self) -> String {
        to_hex(&self.0.finalize())
    }
}

/// The SHA-256 of `data` in lowercase hex.
pub(crate) fn hex(data: &[u8]) -> String {
    to_hex(&sha2::Sha256::digest(data))
}

fn to_hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut out = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        out.push(DIGITS[usize::from(b >> 4)] as char);
        out.push(DIGITS[usize::from(b & 0xf)] as char);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_the_standard_test_vectors() {
        assert_eq!(
            hex(b""),
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        );
        assert_eq!(
            hex(b"abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
        assert_eq!(
            hex(b"abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"
        );
        // Split updates across block boundaries give the same digest.
        let data = vec![b'a'; 1_000];
        let mut h = Sha256::default();
        for chunk in data.chunks(63) {
            h.update(chunk);
        }
        assert_eq!(h.finish_hex(), hex(&data));
        let mut h = Sha256::default();
        for _ in 0..1_000 {
            h.update(&[b'a'; 1_000]);
        }
        assert_eq!(
            h.finish_hex(),
            "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0"
        );
    }
}

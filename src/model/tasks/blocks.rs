//! The bytes the line walk asks about, 64 at a time: one bit a byte for `\n`, `` ` ``, `<`
//! and `[`. One pass over a block answers "where does this line end, and does it hold a
//! backtick, a `<` or a `[`" for every line in it, where a search per line and per byte
//! was most of `tasks count` (DESIGN-NOTES "Reading a large tasks.md").

/// One bit per byte of a 64-byte block (bit `i` is byte `base + i`); bytes past the end of
/// the text read as 0, in no mask.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(super) struct Block {
    pub(super) newline: u64,
    pub(super) tick: u64,
    pub(super) lt: u64,
    pub(super) bracket: u64,
}

impl Block {
    /// The block of `text` that starts at byte `base`.
    pub(super) fn at(text: &[u8], base: usize) -> Block {
        match text.get(base..base + 64) {
            Some(bytes) => Block::of(bytes.try_into().expect("64 bytes")),
            None => {
                let mut padded = [0u8; 64];
                let tail = text.get(base..).unwrap_or_default();
                padded[..tail.len()].copy_from_slice(tail);
                Block::of(&padded)
            }
        }
    }

    #[cfg(target_arch = "x86_64")]
    fn of(bytes: &[u8; 64]) -> Block {
        use std::arch::x86_64::{
            __m128i, _mm_cmpeq_epi8, _mm_loadu_si128, _mm_movemask_epi8, _mm_set1_epi8,
        };
        let mut block = Block::default();
        for (i, chunk) in bytes.chunks_exact(16).enumerate() {
            // SAFETY: SSE2 is part of every x86_64 target; `chunk` is 16 readable bytes and
            // `_mm_loadu_si128` takes an unaligned pointer.
            let masks = unsafe {
                let v = _mm_loadu_si128(chunk.as_ptr().cast::<__m128i>());
                let bits = |b: u8| {
                    let hits = _mm_cmpeq_epi8(v, _mm_set1_epi8(b as i8));
                    u64::from(_mm_movemask_epi8(hits) as u16)
                };
                [bits(b'\n'), bits(b'`'), bits(b'<'), bits(b'[')]
            };
            let shift = 16 * i;
            block.newline |= masks[0] << shift;
            block.tick |= masks[1] << shift;
            block.lt |= masks[2] << shift;
            block.bracket |= masks[3] << shift;
        }
        block
    }

    #[cfg(not(target_arch = "x86_64"))]
    fn of(bytes: &[u8; 64]) -> Block {
        let mut block = Block::default();
        for (i, &b) in bytes.iter().enumerate() {
            let bit = 1u64 << i;
            match b {
                b'\n' => block.newline |= bit,
                b'`' => block.tick |= bit,
                b'<' => block.lt |= bit,
                b'[' => block.bracket |= bit,
                _ => {}
            }
        }
        block
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn slow(text: &[u8], base: usize) -> Block {
        let mut block = Block::default();
        for i in 0..64 {
            let bit = 1u64 << i;
            match text.get(base + i) {
                Some(b'\n') => block.newline |= bit,
                Some(b'`') => block.tick |= bit,
                Some(b'<') => block.lt |= bit,
                Some(b'[') => block.bracket |= bit,
                _ => {}
            }
        }
        block
    }

    #[test]
    fn blocks_agree_with_a_byte_by_byte_reading() {
        // xorshift over an alphabet heavy in the four bytes, with high bytes that must not
        // be taken for them (0x8a is `\n` + 0x80).
        let alphabet = b"\n`<[a \x8a\xe0\xdb\xbc";
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        let text: Vec<u8> = (0..1000)
            .map(|_| {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                alphabet[(state % alphabet.len() as u64) as usize]
            })
            .collect();
        for base in 0..text.len() + 70 {
            assert_eq!(Block::at(&text, base), slow(&text, base), "at {base}");
        }
        assert_eq!(Block::at(b"", 0), Block::default());
        assert_eq!(Block::at(b"a\n", 0).newline, 0b10);
    }
}

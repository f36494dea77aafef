//! JSON strings written as they are when nothing in them needs escaping: the hot response
//! bodies (the token response, the API's) are mostly such strings, and serde_json looks
//! each byte up to see whether it needs escaping, some eight instructions a byte
//! (docs/performance.md).

/// `value` as a JSON string, the bytes serde_json writes for it: between quotes as it is
/// when JSON needs no escape in it (printable ASCII without `"` and `\`), else escaped by
/// serde_json.
pub fn write_json_string(out: &mut Vec<u8>, value: &str) -> Result<(), serde_json::Error> {
    if plain(value.as_bytes()) {
        out.push(b'"');
        out.extend_from_slice(value.as_bytes());
        out.push(b'"');
        Ok(())
    } else {
        serde_json::to_writer(out, value)
    }
}

/// Whether JSON needs no escape in `bytes`. Whole 64-byte chunks are folded without an
/// early exit, which the compiler turns into vector instructions (about one instruction a
/// byte, against eight or more for a loop that stops at the first odd byte); the rest, all
/// of a short value (an id, a name), eight bytes at a time in a word.
fn plain(bytes: &[u8]) -> bool {
    let (chunks, rest) = bytes.as_chunks::<64>();
    let chunks_plain = chunks.iter().all(|chunk| {
        let odd = chunk.iter().fold(0u8, |odd, &b| {
            odd | u8::from(b < b' ')
                | u8::from(b > b'~')
                | u8::from(b == b'"')
                | u8::from(b == b'\\')
        });
        odd == 0
    });
    chunks_plain && plain_words(rest)
}

/// [`plain`] a word at a time: each test sets a byte's top bit where it holds (the classic
/// "has a byte less than / more than / equal to" word tricks). A borrow or carry between
/// bytes only starts at a byte that holds already, so the answer for the word is exact.
fn plain_words(bytes: &[u8]) -> bool {
    const ONES: u64 = u64::MAX / 255;
    const HIGH: u64 = ONES * 0x80;
    let zero_byte = |word: u64| word.wrapping_sub(ONES) & !word & HIGH;
    let odd = |word: u64| {
        let control = word.wrapping_sub(ONES * u64::from(b' ')) & !word & HIGH;
        let above_tilde = (word.wrapping_add(ONES * (127 - u64::from(b'~'))) | word) & HIGH;
        let quote = zero_byte(word ^ (ONES * u64::from(b'"')));
        let backslash = zero_byte(word ^ (ONES * u64::from(b'\\')));
        control | above_tilde | quote | backslash
    };
    let (words, rest) = bytes.as_chunks::<8>();
    // The bytes past the last whole word: as the value's last eight bytes when it has eight
    // (testing some bytes twice changes nothing), else shifted into a word of `a`s. Copying
    // them into a padded word instead cost a `memcpy` call a value, 15% of writing a short
    // string (docs/performance.md).
    let tail = match bytes.last_chunk::<8>() {
        Some(last) => u64::from_le_bytes(*last),
        None => rest.iter().rev().fold(ONES * u64::from(b'a'), |word, &b| {
            (word << 8) | u64::from(b)
        }),
    };
    let found = words.iter().fold(odd(tail), |found, word| {
        found | odd(u64::from_le_bytes(*word))
    });
    found == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    fn written(value: &str) -> String {
        let mut out = Vec::new();
        write_json_string(&mut out, value).unwrap();
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn a_string_is_written_as_serde_json_writes_it() {
        for value in [
            "",
            "plain text 0-9 ~",
            "quote\"",
            "back\\slash",
            "tab\t",
            "nul\u{0}",
            "del\u{7f}",
            "é ü",
            "\u{2028}",
        ] {
            assert_eq!(written(value), serde_json::to_string(value).unwrap());
        }
    }

    /// Every byte value, at every place of values short and long (the word-at-a-time part
    /// and the chunks), against the rule itself.
    #[test]
    fn every_byte_is_judged_as_json_needs_at_every_place() {
        let needs_escape = |b: u8| !(b' '..=b'~').contains(&b) || b == b'"' || b == b'\\';
        for length in [1, 7, 8, 9, 15, 16, 36, 63, 64, 65, 130] {
            for at in 0..length {
                for odd in 0..=255u8 {
                    let mut bytes = vec![b'x'; length];
                    bytes[at] = odd;
                    assert_eq!(
                        plain(&bytes),
                        !needs_escape(odd),
                        "{odd:#x} at {at} of {length}"
                    );
                }
            }
        }
        assert!(plain(b""));
        // Every printable byte but `"` and `\`, side by side in every word alignment.
        let printable: Vec<u8> = (b' '..=b'~').filter(|b| !b"\"\\".contains(b)).collect();
        for start in 0..8 {
            assert!(plain(&printable[start..]), "from {start}");
        }
    }
}

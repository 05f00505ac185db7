//! A window of a text file in characters, decoded block by block: the reader stops at the end
//! of the window (or counts on to the end of a small file), so a window of a huge file costs
//! what precedes it, never the whole file in memory.

use std::io::Read;

use super::{BLOCK, FileError};

/// Characters `start..end` of a file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Window {
    pub text: String,
    /// Where the window begins (the file's length when asked past its end).
    pub start: usize,
    pub end: usize,
    /// The file's length in characters, when it was counted.
    pub total: Option<usize>,
    /// Whether characters follow the window.
    pub more: bool,
}

/// Reads `length` characters from character `start`; `count_all` reads on to the end to count
/// the characters. Text that is not UTF-8 (in what was read) is refused.
pub(super) fn cut(
    mut reader: impl Read,
    start: usize,
    length: usize,
    count_all: bool,
) -> Result<Window, FileError> {
    let stop = start.saturating_add(length);
    let mut text = String::new();
    let mut index = 0_usize;
    let mut taken = 0_usize;
    let mut more = false;
    let mut block = vec![0_u8; BLOCK + 4];
    let mut carried = 0_usize;
    'reading: loop {
        let read = match reader.read(&mut block[carried..BLOCK + carried]) {
            Ok(read) => read,
            Err(error) if error.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(source) => {
                return Err(FileError::Io {
                    path: std::path::PathBuf::new(),
                    source,
                });
            }
        };
        if read == 0 {
            if carried > 0 {
                return Err(FileError::Binary);
            }
            break;
        }
        let filled = carried + read;
        let decoded = match std::str::from_utf8(&block[..filled]) {
            Ok(decoded) => decoded,
            // A character cut by the block's end: decoded with the next block.
            Err(error) if error.error_len().is_none() => {
                std::str::from_utf8(&block[..error.valid_up_to()]).map_err(|_| FileError::Binary)?
            }
            Err(_) => return Err(FileError::Binary),
        };
        let valid = decoded.len();
        // A block wholly before the window, or after it while counting on, is counted at once
        // (`chars().count()` counts a word of bytes at a time): walking its characters one by
        // one made a window near the end of a 3 GB file cost 17 s.
        let characters = decoded.chars().count();
        if index + characters <= start || index >= stop {
            more |= index >= stop && characters > 0;
            index += characters;
            if more && !count_all {
                break 'reading;
            }
        } else {
            for character in decoded.chars() {
                if index >= stop {
                    more = true;
                    if !count_all {
                        break 'reading;
                    }
                } else if index >= start {
                    text.push(character);
                    taken += 1;
                }
                index += 1;
            }
        }
        block.copy_within(valid..filled, 0);
        carried = filled - valid;
    }
    let begin = start.min(index);
    Ok(Window {
        text,
        start: begin,
        end: begin + taken,
        total: (count_all || !more).then_some(index),
        more,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;
    use proptest::prelude::*;

    /// A reader that hands out a few bytes at a time, to split characters across blocks.
    struct Trickle<'a>(&'a [u8], usize);

    impl Read for Trickle<'_> {
        fn read(&mut self, buffer: &mut [u8]) -> std::io::Result<usize> {
            let count = self.1.min(buffer.len()).min(self.0.len());
            buffer[..count].copy_from_slice(&self.0[..count]);
            self.0 = &self.0[count..];
            Ok(count)
        }
    }

    #[test]
    fn a_window_stops_reading_at_its_end() {
        let window = cut("wörld 😀!".as_bytes(), 1, 3, false).unwrap();
        assert_eq!(
            window,
            Window {
                text: "örl".into(),
                start: 1,
                end: 4,
                total: None,
                more: true
            }
        );
        let counted = cut("wörld 😀!".as_bytes(), 6, 10, true).unwrap();
        assert_eq!(
            (counted.text.as_str(), counted.total, counted.more),
            ("😀!", Some(8), false)
        );
    }

    #[test]
    fn invalid_text_is_refused() {
        assert!(matches!(
            cut(&[b'a', 0xff, b'b'][..], 0, 10, true),
            Err(FileError::Binary)
        ));
        assert!(matches!(
            cut(&[b'a', 0xe2, 0x82][..], 0, 10, true),
            Err(FileError::Binary)
        ));
    }

    proptest! {
        /// Any window of any text, read in any block size, is the same slice of characters a
        /// whole-file read gives.
        #[test]
        fn windows_match_a_whole_read(
            text in "\\PC{0,64}",
            start in 0_usize..80,
            length in 0_usize..80,
            step in 1_usize..7,
            count_all in any::<bool>(),
        ) {
            let window = cut(Trickle(text.as_bytes(), step), start, length, count_all).unwrap();
            let characters: Vec<char> = text.chars().collect();
            let expected: String = characters.iter().skip(start).take(length).collect();
            prop_assert_eq!(&window.text, &expected);
            prop_assert_eq!(window.start, start.min(characters.len()));
            prop_assert_eq!(window.more, start.saturating_add(length) < characters.len());
            if count_all || !window.more {
                prop_assert_eq!(window.total, Some(characters.len()));
            }
        }
    }
}

//! Windows of a language model's tokens cut as SAELens cuts a text
//! dataset (`concat_and_batch_sequences` with its defaults: `prepend_bos`,
//! the BOS token as the sequence separator, sequences concatenated), so a
//! recording holds the token windows an SAELens run over the same texts
//! would.
//!
//! The texts' tokens run on one after another. Each window starts with the
//! BOS token (unless its first token is one already); a text that starts
//! inside a window is preceded by the separator (unless it starts with it).
//! A text that runs past a window's end goes on in the next window, after
//! that window's BOS. The last, partial window is dropped. Without a BOS
//! token, the texts' tokens are cut into consecutive windows.

/// The shortest window a BOS token leaves room in.
pub(crate) const MIN_WINDOW_WITH_BOS: usize = 2;

/// The windows of `window` tokens of `texts`, flattened, with `bos` as the
/// first token of each window and between texts. A window must hold a
/// token besides its BOS ([`MIN_WINDOW_WITH_BOS`]); a shorter one gives no
/// window (where SAELens would loop forever).
pub(crate) fn saelens_windows(texts: &[Vec<u32>], window: usize, bos: Option<u32>) -> Vec<u32> {
    let mut windows = Vec::new();
    if window
        < if bos.is_some() {
            MIN_WINDOW_WITH_BOS
        } else {
            1
        }
    {
        return windows;
    }
    // The window being filled: its first token's place in `windows`.
    let mut start: Option<usize> = None;
    for tokens in texts {
        let mut offset = 0;
        while offset < tokens.len() {
            let first = tokens[offset];
            let prefix = bos.filter(|&b| b != first);
            match start {
                None => {
                    start = Some(windows.len());
                    windows.extend(prefix);
                }
                Some(at) => {
                    // The separator, if there is room for it.
                    if windows.len() - at < window {
                        windows.extend(prefix);
                    }
                }
            }
            let at = start.expect("a window is open");
            let room = window - (windows.len() - at).min(window);
            let take = room.min(tokens.len() - offset);
            windows.extend_from_slice(&tokens[offset..offset + take]);
            offset += take;
            if windows.len() - at == window {
                start = None;
            }
        }
    }
    if let Some(at) = start {
        windows.truncate(at);
    }
    windows
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn windows_start_with_bos_and_texts_are_separated_by_it() {
        let bos = Some(0);
        // ctx 4: [0 1 2 3] [0 4 0 5] [0 6 7 8]; the trailing [0 9] dropped.
        let texts = vec![vec![1, 2, 3, 4], vec![5, 6, 7, 8, 9]];
        assert_eq!(
            saelens_windows(&texts, 4, bos),
            [0, 1, 2, 3, 0, 4, 0, 5, 0, 6, 7, 8]
        );
        // A text starting with BOS gets no second one; an empty text is
        // skipped; a separator landing on the last place ends the window.
        let texts = vec![vec![0, 1, 2], vec![], vec![3, 4]];
        assert_eq!(saelens_windows(&texts, 4, bos), [0, 1, 2, 0]);
        // Without a BOS token: consecutive windows.
        assert_eq!(
            saelens_windows(&[vec![1, 2, 3], vec![4, 5]], 2, None),
            [1, 2, 3, 4]
        );
        // A window of one token would hold only the BOS: none is cut.
        assert!(saelens_windows(&[vec![1, 2]], 1, bos).is_empty());
        assert_eq!(saelens_windows(&[vec![1, 2]], 1, None), [1, 2]);
    }
}

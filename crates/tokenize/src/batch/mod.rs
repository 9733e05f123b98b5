//! Encoding many texts at once on the current rayon pool: lists of texts
//! (the Python batch APIs) and a stream of JSON lines (`modelbin tokens
//! encode --jsonl`, in [`jsonl`]).
//!
//! Both cut their input into tasks of many texts and have each task encode
//! its texts one after another into one buffer of ids with the end of each
//! text's ids ([`Tokenizer::encode_run`]): a task then keeps the
//! tokenizer's tables in its core's cache, and the ids of a task are one
//! run to copy instead of an allocation per text. The results do not
//! depend on the thread count.

pub mod jsonl;

use rayon::prelude::*;

use crate::{Result, Specials, Tokenizer};

/// Tasks per thread of a list of texts: enough to balance texts of uneven
/// length over the threads, few enough that each task's ids are a long
/// run to copy.
const TASKS_PER_THREAD: usize = 16;

/// Texts per task of a list of `texts` texts on the current pool.
fn texts_per_task(texts: usize) -> usize {
    texts
        .div_ceil(rayon::current_num_threads() * TASKS_PER_THREAD)
        .max(1)
}

/// Every text's ids, one after another, and where each text's ids start
/// (one offset more than there are texts; the last is `ids.len()`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FlatIds {
    /// The ids of every text, in order.
    pub ids: Vec<u32>,
    /// Where the ids of text `i` are: `offsets[i]..offsets[i + 1]`.
    pub offsets: Vec<usize>,
}

impl Tokenizer {
    /// Appends the ids of `text` to `ids`, the `allowed` special tokens
    /// becoming their ids and any other special token encoded as text
    /// (with none allowed, [`encode_ordinary_into`](Self::encode_ordinary_into)).
    pub fn encode_allowed_into(
        &self,
        text: &str,
        allowed: &[&str],
        ids: &mut Vec<u32>,
    ) -> Result<()> {
        if allowed.is_empty() {
            return self.encode_ordinary_into(text, ids);
        }
        let encoded = self.encode(text, Specials::Only(allowed), Specials::None)?;
        ids.extend_from_slice(&encoded);
        Ok(())
    }

    /// Encodes `texts` one after another as
    /// [`encode_allowed_into`](Self::encode_allowed_into) does, appending
    /// their ids to `ids` and the end of each text's ids to `ends`. Stops
    /// at the first text that fails, giving its index in `texts` with the
    /// error; the texts before it stay encoded.
    pub fn encode_run<'t>(
        &self,
        texts: impl IntoIterator<Item = &'t str>,
        allowed: &[&str],
        ids: &mut Vec<u32>,
        ends: &mut Vec<usize>,
    ) -> std::result::Result<(), (usize, crate::Error)> {
        for (index, text) in texts.into_iter().enumerate() {
            self.encode_allowed_into(text, allowed, ids)
                .map_err(|e| (index, e))?;
            ends.push(ids.len());
        }
        Ok(())
    }

    /// The ids of every text of `texts` as [`FlatIds`], encoded in
    /// parallel on the current rayon pool as
    /// [`encode_allowed_into`](Self::encode_allowed_into) does.
    pub fn encode_batch_flat<S: AsRef<str> + Sync>(
        &self,
        texts: &[S],
        allowed: &[&str],
    ) -> Result<FlatIds> {
        let tasks: Vec<(Vec<u32>, Vec<usize>)> = texts
            .par_chunks(texts_per_task(texts.len()))
            .map(|chunk| {
                let (mut ids, mut ends) = (Vec::new(), Vec::with_capacity(chunk.len()));
                self.encode_run(
                    chunk.iter().map(AsRef::as_ref),
                    allowed,
                    &mut ids,
                    &mut ends,
                )
                .map_err(|(_, e)| e)?;
                Ok((ids, ends))
            })
            .collect::<Result<_>>()?;
        let total = tasks.iter().map(|(ids, _)| ids.len()).sum();
        let mut flat = FlatIds {
            ids: Vec::with_capacity(total),
            offsets: Vec::with_capacity(texts.len() + 1),
        };
        flat.offsets.push(0);
        for (ids, ends) in tasks {
            let base = flat.ids.len();
            flat.offsets.extend(ends.iter().map(|end| base + end));
            flat.ids.extend_from_slice(&ids);
        }
        Ok(flat)
    }

    /// [`encode`](Self::encode) of each text of `texts`, in parallel on
    /// the current rayon pool.
    pub fn encode_batch<S: AsRef<str> + Sync>(
        &self,
        texts: &[S],
        allowed: Specials<'_>,
        disallowed: Specials<'_>,
    ) -> Result<Vec<Vec<u32>>> {
        texts
            .par_iter()
            .map(|text| self.encode(text.as_ref(), allowed, disallowed))
            .collect()
    }

    /// [`count`](Self::count) of each text of `texts`, in parallel on the
    /// current rayon pool.
    pub fn count_batch<S: AsRef<str> + Sync>(&self, texts: &[S]) -> Result<Vec<usize>> {
        texts
            .par_iter()
            .with_min_len(texts_per_task(texts.len()))
            .map(|text| self.count(text.as_ref()))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use crate::{Specials, Tokenizer};

    fn texts() -> Vec<String> {
        (0..500)
            .map(|i| match i % 3 {
                0 => format!("text {i}: plain words {}", "and more ".repeat(i % 40)),
                1 => format!("« {i} » 漢字 🙂<|endoftext|>"),
                _ => String::new(),
            })
            .collect()
    }

    fn on_threads<R: Send>(threads: usize, f: impl FnOnce() -> R + Send) -> R {
        rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .unwrap()
            .install(f)
    }

    /// Each batch API gives what the one-text call gives, at any thread
    /// count.
    #[test]
    fn batches_equal_one_text_at_a_time() {
        let t = Tokenizer::embedded("cl100k_base").unwrap();
        let texts = texts();
        let allowed = ["<|endoftext|>"];
        for threads in [1, 3] {
            for allow in [&allowed[..], &[]] {
                let flat = on_threads(threads, || t.encode_batch_flat(&texts, allow)).unwrap();
                assert_eq!(flat.offsets.len(), texts.len() + 1);
                for (i, text) in texts.iter().enumerate() {
                    let want = t
                        .encode(text, Specials::Only(allow), Specials::None)
                        .unwrap();
                    assert_eq!(flat.ids[flat.offsets[i]..flat.offsets[i + 1]], want);
                }
                assert_eq!(flat.offsets[texts.len()], flat.ids.len());
            }
            let each = on_threads(threads, || {
                t.encode_batch(&texts, Specials::All, Specials::None)
            })
            .unwrap();
            let counts = on_threads(threads, || t.count_batch(&texts)).unwrap();
            for ((text, ids), count) in texts.iter().zip(&each).zip(&counts) {
                assert_eq!(*ids, t.encode(text, Specials::All, Specials::None).unwrap());
                assert_eq!(*count, t.count(text).unwrap());
            }
        }
    }

    /// A disallowed special token refuses the batch with the one-text
    /// call's error.
    #[test]
    fn a_disallowed_special_token_refuses_the_batch() {
        let t = Tokenizer::embedded("cl100k_base").unwrap();
        let texts = texts();
        match t.encode_batch(&texts, Specials::None, Specials::All) {
            Err(crate::Error::DisallowedSpecial { token, .. }) => {
                assert_eq!(token, "<|endoftext|>");
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn no_texts_no_ids() {
        let t = Tokenizer::embedded("cl100k_base").unwrap();
        let flat = t.encode_batch_flat::<&str>(&[], &[]).unwrap();
        assert_eq!((flat.ids.len(), flat.offsets), (0, vec![0]));
    }
}

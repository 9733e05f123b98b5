//! The post-processor: the ids `encode(text, add_special_tokens=true)`
//! puts around the text's ids. Only ids are added; nothing is
//! re-tokenized, so both engines share this module.
//!
//! Read: `TemplateProcessing` (its `single` template), `RobertaProcessing`
//! and `BertProcessing` (`cls $A sep`), `ByteLevel` (adds nothing) and
//! `Sequence` of these, applied in order. Another shape is left to the
//! `tokenizers` crate (`None` from [`Post::read`]).

use serde_json::Value;

use crate::hf::error::HfTokenizerError as E;
use crate::hf::raw::{MAX_TEMPLATE, type_of, within};

/// Stands for the text's ids when a template is applied to find its
/// leading and trailing special ids (no real id is this large).
const TEXT: u32 = u32::MAX;

/// One step of a post-processor.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Piece {
    /// Special ids.
    Ids(Vec<u32>),
    /// The sequence so far.
    Text,
}

/// A post-processor as a list of templates, applied in order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Post {
    steps: Vec<Vec<Piece>>,
}

impl Post {
    /// The post-processor of `value` (null: none), or `None` for a shape
    /// modelbin does not read.
    ///
    /// A template that repeats the text (`$A` twice: each encode would
    /// double it per step), or that adds more than [`MAX_TEMPLATE`] ids in
    /// all, is refused for both engines.
    pub fn read(value: Option<&Value>) -> Result<Option<Post>, E> {
        let mut post = Post::default();
        if let Some(value) = value.filter(|v| !v.is_null())
            && post.read_into(value, 0).is_none()
        {
            return Ok(None);
        }
        let mut added = 0usize;
        for step in &post.steps {
            let texts = step.iter().filter(|p| **p == Piece::Text).count();
            if texts != 1 {
                return Err(E::Invalid {
                    what: "tokenizer.json post_processor",
                    reason: format!("a template must hold $A once, not {texts} times"),
                });
            }
            for piece in step {
                if let Piece::Ids(ids) = piece {
                    added += ids.len();
                }
            }
        }
        within("the post-processor's special ids", added, MAX_TEMPLATE)?;
        Ok(Some(post))
    }

    fn read_into(&mut self, value: &Value, depth: usize) -> Option<()> {
        if depth > 8 || self.steps.len() > MAX_TEMPLATE {
            return None;
        }
        match type_of(value)? {
            "ByteLevel" => Some(()),
            "Sequence" => {
                for member in value.get("processors")?.as_array()? {
                    self.read_into(member, depth + 1)?;
                }
                Some(())
            }
            "RobertaProcessing" | "BertProcessing" => {
                let id = |key: &str| -> Option<u32> {
                    let pair = value.get(key)?.as_array()?;
                    pair.first()?.as_str()?;
                    u32::try_from(pair.get(1)?.as_u64()?).ok()
                };
                let (cls, sep) = (id("cls")?, id("sep")?);
                self.steps.push(vec![
                    Piece::Ids(vec![cls]),
                    Piece::Text,
                    Piece::Ids(vec![sep]),
                ]);
                Some(())
            }
            "TemplateProcessing" => {
                let specials = value.get("special_tokens")?.as_object()?;
                let mut step = vec![];
                for piece in value.get("single")?.as_array()? {
                    if step.len() >= MAX_TEMPLATE {
                        return None;
                    }
                    if let Some(seq) = piece.get("Sequence") {
                        if seq.get("id")?.as_str()? != "A" {
                            return None;
                        }
                        step.push(Piece::Text);
                    } else {
                        let name = piece.get("SpecialToken")?.get("id")?.as_str()?;
                        let ids = specials.get(name)?.get("ids")?.as_array()?;
                        if ids.len() > MAX_TEMPLATE {
                            return None;
                        }
                        let ids = ids
                            .iter()
                            .map(|v| u32::try_from(v.as_u64()?).ok())
                            .collect::<Option<Vec<u32>>>()?;
                        step.push(Piece::Ids(ids));
                    }
                }
                self.steps.push(step);
                Some(())
            }
            _ => None,
        }
    }

    /// `ids` with the post-processor's special ids around them.
    pub fn apply(&self, mut ids: Vec<u32>) -> Vec<u32> {
        for step in &self.steps {
            let mut out = Vec::with_capacity(ids.len() + step.len());
            for piece in step {
                match piece {
                    Piece::Ids(special) => out.extend_from_slice(special),
                    Piece::Text => out.extend_from_slice(&ids),
                }
            }
            ids = out;
        }
        ids
    }

    /// The special id put before the text, if any.
    pub fn leading(&self) -> Option<u32> {
        self.apply(vec![TEXT])
            .first()
            .copied()
            .filter(|&id| id != TEXT)
    }

    /// The special id put after the text, if any.
    pub fn trailing(&self) -> Option<u32> {
        self.apply(vec![TEXT])
            .last()
            .copied()
            .filter(|&id| id != TEXT)
    }
}

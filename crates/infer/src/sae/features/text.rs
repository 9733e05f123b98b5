//! Where an input's context lies: its tokens' text and, for each token, the
//! example of the view recorded at it. Over a union the text is the
//! members' one after the other and images are numbered over the union, so
//! a context near a member's edge runs into its neighbour's text, as it
//! runs into the next window within a dataset.

use modelbin_format::saev::{Patches, TokenText, Union};

use super::{CONTEXT_AFTER, CONTEXT_BEFORE};
use crate::Result;

/// The tokens around an input.
pub(super) struct Span {
    /// Each token's text.
    pub pieces: Vec<String>,
    /// The view's example at each token, `None` where the view holds none.
    pub examples: Vec<Option<u64>>,
    /// Where the input is.
    pub at: usize,
}

/// How a dataset's (or a union's) text and a view's examples line up.
pub(super) struct Layout<'d> {
    text: Option<TokenText<'d>>,
    patches: Patches,
    /// Text tokens per image window.
    window: u64,
    cls: bool,
    n_imgs: u64,
}

impl<'d> Layout<'d> {
    /// The layout of `union` seen through `patches`.
    pub fn of(union: &'d Union, patches: Patches) -> Result<Layout<'d>> {
        let metadata = union.metadata();
        Ok(Layout {
            text: TokenText::of_union(union)?,
            patches,
            window: metadata.n_patches_per_img.max(1),
            cls: metadata.cls_token,
            n_imgs: union.n_imgs(),
        })
    }

    /// Whether the dataset (every member of the union) kept its token ids.
    pub fn has_text(&self) -> bool {
        self.text.is_some()
    }

    /// The view's index of the example at token `token` of image `img`
    /// (token 0 being `[CLS]` when recorded), if the view holds it.
    fn example_of(&self, img: u64, token: u64) -> Option<u64> {
        if img >= self.n_imgs {
            return None;
        }
        let cls = u64::from(self.cls);
        match self.patches {
            Patches::Image => (token >= cls).then(|| img * self.window + token - cls),
            Patches::All => Some(img * (self.window + cls) + token),
            Patches::Cls => (token == 0).then_some(img),
        }
    }

    /// The text around token `token` of image `img`: [`CONTEXT_BEFORE`]
    /// tokens before it and [`CONTEXT_AFTER`] after (windows follow each
    /// other in the text, so a context runs into its neighbours); a `[CLS]`
    /// token is followed by the start of its window. `None` without text.
    pub fn span(&self, img: u64, token: u64) -> Option<Span> {
        let text = self.text.as_ref()?;
        let cls = u64::from(self.cls);
        if self.cls && token == 0 {
            let ids = text.ids(img * self.window, CONTEXT_AFTER.min(self.window as usize));
            let mut pieces = vec!["[CLS]".to_owned()];
            pieces.extend(text.pieces(&ids));
            let examples = (0..=ids.len() as u64)
                .map(|t| self.example_of(img, t))
                .collect();
            return Some(Span {
                pieces,
                examples,
                at: 0,
            });
        }
        let position = img * self.window + token - cls;
        let start = position.saturating_sub(CONTEXT_BEFORE as u64);
        let ids = text.ids(start, (position - start) as usize + 1 + CONTEXT_AFTER);
        let examples = (start..start + ids.len() as u64)
            .map(|p| self.example_of(p / self.window, p % self.window + cls))
            .collect();
        Some(Span {
            pieces: text.pieces(&ids),
            examples,
            at: (position - start) as usize,
        })
    }
}

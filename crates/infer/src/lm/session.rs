//! Decoding one sequence with a KV cache: each call runs only the new
//! tokens, their attention reading the keys and values cached for the
//! earlier ones (stored after the rotary embedding, as transformers does).

use crate::lm::block::Rows;
use crate::lm::model::{KvCache, LanguageModel};
use crate::model::Site;
use crate::nn::attention::CausalSpan;
use crate::{Error, Result};

impl LanguageModel {
    /// Logits `[ids.len(), vocab]` (row-major) at every position of
    /// `ids`, one sequence from position 0.
    pub fn logits(&self, ids: &[u32]) -> Result<Vec<f32>> {
        if ids.is_empty() {
            return Err(Error::EmptyInput);
        }
        self.session().extend(ids, true)
    }

    /// A decoding session with an empty KV cache.
    pub fn session(&self) -> Session<'_> {
        Session::new(self)
    }
}

/// The state of one sequence: the keys and values of the tokens seen so
/// far, per layer. The cache grows with the tokens run (never reserved
/// for the whole context up front).
#[derive(Debug, Clone)]
pub struct Session<'m> {
    model: &'m LanguageModel,
    /// Per layer, `[position, kv_heads · head_dim]`.
    keys: Vec<Vec<f32>>,
    values: Vec<Vec<f32>>,
    len: usize,
}

impl<'m> Session<'m> {
    /// An empty session of `model`.
    pub(crate) fn new(model: &'m LanguageModel) -> Session<'m> {
        let layers = model.config.layers;
        Session {
            model,
            keys: vec![Vec::new(); layers],
            values: vec![Vec::new(); layers],
            len: 0,
        }
    }

    /// Tokens in the cache.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the cache is empty.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Runs `ids` after the cached tokens; returns the logits of every new
    /// position (`all`: `[ids.len(), vocab]`) or of the last one only.
    pub fn extend(&mut self, ids: &[u32], all: bool) -> Result<Vec<f32>> {
        self.extend_with_hook(ids, all, &mut |_, _, _| {})
    }

    /// [`Session::extend`], calling `hook(layer, site, rows)` at every
    /// site of every block with the new positions' rows there
    /// (`[ids.len(), hidden]`), which the hook may read or replace (to
    /// splice in an autoencoder's reconstruction, or ablate): the rest of
    /// the pass, and the cache, see what it leaves.
    pub fn extend_with_hook(
        &mut self,
        ids: &[u32],
        all: bool,
        hook: &mut dyn FnMut(usize, Site, &mut [f32]),
    ) -> Result<Vec<f32>> {
        let model = self.model;
        if ids.is_empty() {
            return Err(Error::EmptyInput);
        }
        let start = self.len;
        let end = start.saturating_add(ids.len());
        model.check_ids(ids, start, end)?;
        let c = &model.config;
        let extra = if all {
            ids.len() * c.vocab_size
        } else {
            c.vocab_size
        };
        let cached = [c.kv_heads, c.head_dim, c.layers, 2]
            .iter()
            .fold(end, |n, &f| n.saturating_mul(f));
        model.check_memory(ids.len(), extra.saturating_add(cached), || {
            format!("a forward pass over {} tokens after {start}", ids.len())
        })?;
        let positions: Vec<usize> = (start..end).collect();
        let spans = [CausalSpan {
            queries: 0,
            len: ids.len(),
            keys: 0,
            past: start,
        }];
        let tables = model.rope_tables(start, ids.len());
        let rows = Rows {
            spans: &spans,
            positions: &positions,
            rope: &tables,
            rope_first: start,
        };
        let mut x = model.embed(ids, &positions);
        let last = c.layers - 1;
        model.run_blocks(
            &mut x,
            &rows,
            last,
            Some(KvCache {
                keys: &mut self.keys,
                values: &mut self.values,
            }),
            hook,
        );
        self.len = end;
        let rows = if all {
            &x[..]
        } else {
            &x[(ids.len() - 1) * c.hidden..]
        };
        model.head_logits(rows)
    }
}

//! Steering: a vector added to the residual stream at one site of one
//! block, at every position a session runs (the prompt and each generated
//! token), the rest of the pass and the KV cache seeing the sum, for any
//! model that predicts tokens ([`HookedDecoder`]). What an autoencoder's
//! latent is pushed by (`α · W_dec[latent]`, see [`crate::sae::steer`]).
//!
//! A steered value must stay finite in f32: the vector, the rows it is
//! added to, and everything after them. The norms normalise a finite row
//! exactly however large it is (they fall back to f64 when its squares
//! overflow), so a large push gives the model's answer to it; a push that
//! makes a value infinite (or NaN) is refused, naming what was steered and
//! where ([`LmError::SteeringOverflow`]).

use super::{HookedDecoder, HookedModel, HookedSession, Site};
use crate::generation::{Decoder, DecoderSession, Generation, Sampling, generate_with};
use crate::{Error, LmError, Result, SaeError};

/// A vector added at `site` of block `layer`.
#[derive(Debug, Clone, PartialEq)]
pub struct Steering {
    layer: usize,
    site: Site,
    vector: Vec<f32>,
    /// What the vector is, for errors (`latent 3 × 2.5`).
    what: String,
}

impl Steering {
    /// `vector` added at `site` of block `layer` of `model`; `what` says
    /// what the vector is, for errors (`latents 3 × 2.5, 7 × -1`).
    /// [`LmError::NoSuchLayer`] past its blocks, a site it does not have
    /// ([`crate::RecordError::LanguageModelSetting`]),
    /// [`SaeError::ModelWidth`] when the vector is not as wide as the model,
    /// [`LmError::SteeringOverflow`] when it holds a NaN or an infinity.
    pub fn new(
        model: &dyn HookedModel,
        layer: usize,
        site: Site,
        vector: Vec<f32>,
        what: String,
    ) -> Result<Steering> {
        if layer >= model.blocks() {
            return Err(LmError::NoSuchLayer {
                layer,
                layers: model.blocks(),
            }
            .into());
        }
        super::check_site(model, site)?;
        if vector.len() != model.width() {
            return Err(SaeError::ModelWidth {
                sae: vector.len(),
                model: model.width(),
            }
            .into());
        }
        let steering = Steering {
            layer,
            site,
            vector,
            what,
        };
        if steering.vector.iter().any(|v| !v.is_finite()) {
            return Err(steering.overflow());
        }
        Ok(steering)
    }

    /// The block.
    pub fn layer(&self) -> usize {
        self.layer
    }

    /// The site.
    pub fn site(&self) -> Site {
        self.site
    }

    /// The vector added.
    pub fn vector(&self) -> &[f32] {
        &self.vector
    }

    /// Adds the vector to every row of `rows` when `(layer, site)` is the
    /// steered site (the hook of [`HookedSession::extend_with_hook`]);
    /// returns `false` when a sum is not finite.
    pub fn apply(&self, layer: usize, site: Site, rows: &mut [f32]) -> bool {
        if layer != self.layer || site != self.site {
            return true;
        }
        let mut finite = true;
        for row in rows.chunks_exact_mut(self.vector.len()) {
            for (x, v) in row.iter_mut().zip(&self.vector) {
                *x += v;
                finite &= x.is_finite();
            }
        }
        finite
    }

    /// The refusal of a steering whose values left f32's range.
    fn overflow(&self) -> Error {
        LmError::SteeringOverflow {
            steering: self.what.clone(),
            hook_name: self.site.hook_name(self.layer),
        }
        .into()
    }

    /// A session of `model` whose every pass is steered.
    pub fn session<'m>(&'m self, model: &'m dyn HookedDecoder) -> SteeredSession<'m> {
        SteeredSession {
            session: model.session(),
            steering: self,
        }
    }
}

/// A session whose every pass adds a [`Steering`].
pub struct SteeredSession<'m> {
    session: Box<dyn HookedSession + 'm>,
    steering: &'m Steering,
}

impl SteeredSession<'_> {
    /// The session's pass over `ids` (logits of every new position, or of
    /// the last), steered; [`LmError::SteeringOverflow`] when a steered
    /// value, or anything computed from it, is not finite.
    pub fn extend(&mut self, ids: &[u32], all: bool) -> Result<Vec<f32>> {
        let steering = self.steering;
        let mut finite = true;
        let logits = self
            .session
            .extend_with_hook(ids, all, &mut |layer, site, rows| {
                finite &= steering.apply(layer, site, rows);
            });
        match logits {
            Ok(_) if !finite => Err(steering.overflow()),
            Err(Error::NonFinite { .. }) => Err(steering.overflow()),
            logits => logits,
        }
    }
}

/// A model steered: a [`Decoder`] for
/// [`generate_with`](crate::generation::generate_with), which then
/// generates as [`crate::lm::generate`] does with the steering added at
/// its site at every position, the prompt's and each generated token's.
#[derive(Clone, Copy)]
pub struct Steered<'m> {
    model: &'m dyn HookedDecoder,
    steering: &'m Steering,
}

impl<'m> Steered<'m> {
    /// `model` steered by `steering`.
    pub fn new(model: &'m dyn HookedDecoder, steering: &'m Steering) -> Steered<'m> {
        Steered { model, steering }
    }
}

impl Decoder for Steered<'_> {
    type Session<'a>
        = SteeredSession<'a>
    where
        Self: 'a;

    fn context(&self) -> usize {
        self.model.context()
    }

    fn start(&self) -> SteeredSession<'_> {
        self.steering.session(self.model)
    }
}

impl DecoderSession for SteeredSession<'_> {
    fn cached(&self) -> usize {
        self.session.len()
    }

    fn extend_last(&mut self, ids: &[u32]) -> Result<Vec<f32>> {
        self.extend(ids, false)
    }
}

/// Generates as [`crate::lm::generate`] does, steered by `steering` when
/// one is given: what `modelbin lm generate` and Python's
/// `LanguageModel.generate` run.
pub fn generate_steered(
    model: &dyn HookedDecoder,
    steering: Option<&Steering>,
    prompt: &[u32],
    max_tokens: usize,
    sampling: Sampling,
    stop: &[u32],
    on_token: impl FnMut(u32),
) -> Result<Generation> {
    match steering {
        Some(steering) => generate_with(
            &Steered::new(model, steering),
            prompt,
            max_tokens,
            sampling,
            stop,
            on_token,
        ),
        None => generate_with(model, prompt, max_tokens, sampling, stop, on_token),
    }
}

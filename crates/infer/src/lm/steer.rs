//! Steering: a vector added to the residual stream at one site of one
//! block, at every position a session runs (the prompt and each generated
//! token), the rest of the pass and the KV cache seeing the sum. What an
//! autoencoder's latent is pushed by (`α · W_dec[latent]`, see
//! [`crate::sae::steer`]).

use crate::Result;
use crate::generation::{Decoder, DecoderSession};
use crate::lm::model::LanguageModel;
use crate::lm::session::Session;
use crate::lm::site::Site;
use crate::{LmError, SaeError};

/// A vector added at `site` of block `layer`.
#[derive(Debug, Clone, PartialEq)]
pub struct Steering {
    layer: usize,
    site: Site,
    vector: Vec<f32>,
}

impl Steering {
    /// `vector` added at `site` of block `layer` of `model`:
    /// [`LmError::NoSuchLayer`] past its blocks, [`SaeError::ModelWidth`]
    /// when the vector is not as wide as the model.
    pub fn new(
        model: &LanguageModel,
        layer: usize,
        site: Site,
        vector: Vec<f32>,
    ) -> Result<Steering> {
        let c = model.config();
        if layer >= c.layers {
            return Err(LmError::NoSuchLayer {
                layer,
                layers: c.layers,
            }
            .into());
        }
        if vector.len() != c.hidden {
            return Err(SaeError::ModelWidth {
                sae: vector.len(),
                model: c.hidden,
            }
            .into());
        }
        Ok(Steering {
            layer,
            site,
            vector,
        })
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
    /// steered site: the hook of [`Session::extend_with_hook`].
    pub fn apply(&self, layer: usize, site: Site, rows: &mut [f32]) {
        if layer == self.layer && site == self.site {
            for row in rows.chunks_exact_mut(self.vector.len()) {
                for (x, v) in row.iter_mut().zip(&self.vector) {
                    *x += v;
                }
            }
        }
    }

    /// A session of `model` whose every pass is steered.
    pub fn session<'m>(&'m self, model: &'m LanguageModel) -> SteeredSession<'m> {
        SteeredSession {
            session: model.session(),
            steering: self,
        }
    }
}

/// A [`Session`] whose every pass adds a [`Steering`].
#[derive(Debug, Clone)]
pub struct SteeredSession<'m> {
    session: Session<'m>,
    steering: &'m Steering,
}

impl SteeredSession<'_> {
    /// [`Session::extend`], steered.
    pub fn extend(&mut self, ids: &[u32], all: bool) -> Result<Vec<f32>> {
        let steering = self.steering;
        self.session
            .extend_with_hook(ids, all, &mut |layer, site, rows| {
                steering.apply(layer, site, rows)
            })
    }
}

/// A model steered: a [`Decoder`] for
/// [`generate_with`](crate::generation::generate_with), which then
/// generates as [`crate::lm::generate`] does with the steering added at
/// its site at every position, the prompt's and each generated token's.
#[derive(Debug, Clone, Copy)]
pub struct Steered<'m> {
    model: &'m LanguageModel,
    steering: &'m Steering,
}

impl<'m> Steered<'m> {
    /// `model` steered by `steering`.
    pub fn new(model: &'m LanguageModel, steering: &'m Steering) -> Steered<'m> {
        Steered { model, steering }
    }
}

impl Decoder for Steered<'_> {
    type Session<'a>
        = SteeredSession<'a>
    where
        Self: 'a;

    fn context(&self) -> usize {
        self.model.config.max_positions
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

//! The points of a block where the residual stream is read (and may be
//! replaced): SAELens's hook points, under TransformerLens's names. Every
//! model has a block's output (`resid_post`); a decoder language model
//! has all four.

use std::fmt;
use std::str::FromStr;

use crate::{Error, LmError};

/// A hook point of a transformer block, as SAELens names it
/// (`blocks.L.hook_<site>`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Site {
    /// The block's input: the embeddings for block 0, else the previous
    /// block's output (`hook_resid_pre`).
    ResidPre,
    /// The block's output, before any final norm (`hook_resid_post`;
    /// transformers' forward hook on the block module).
    ResidPost,
    /// The attention's output after its output projection and bias
    /// (`hook_attn_out`).
    AttnOut,
    /// The MLP's output, its last bias included (`hook_mlp_out`).
    MlpOut,
}

impl Site {
    /// Every site, in the order a block passes them.
    pub const ALL: [Site; 4] = [Site::ResidPre, Site::AttnOut, Site::MlpOut, Site::ResidPost];

    /// The site's name: `resid_pre`, `resid_post`, `attn_out` or `mlp_out`.
    pub fn name(&self) -> &'static str {
        match self {
            Site::ResidPre => "resid_pre",
            Site::ResidPost => "resid_post",
            Site::AttnOut => "attn_out",
            Site::MlpOut => "mlp_out",
        }
    }

    /// SAELens's hook name at `layer`: `blocks.{layer}.hook_{name}`.
    ///
    /// ```
    /// use modelbin_infer::model::Site;
    /// assert_eq!(Site::ResidPost.hook_name(3), "blocks.3.hook_resid_post");
    /// ```
    pub fn hook_name(&self, layer: usize) -> String {
        format!("blocks.{layer}.hook_{}", self.name())
    }

    /// The layer and site of a SAELens hook name (`blocks.L.hook_<site>`,
    /// the inverse of [`Site::hook_name`]); `None` for any other name.
    ///
    /// ```
    /// use modelbin_infer::model::Site;
    /// assert_eq!(Site::of_hook_name("blocks.3.hook_mlp_out"), Some((3, Site::MlpOut)));
    /// assert_eq!(Site::of_hook_name("blocks.3.attn.hook_z"), None);
    /// ```
    pub fn of_hook_name(name: &str) -> Option<(usize, Site)> {
        let rest = name.strip_prefix("blocks.")?;
        let (layer, site) = rest.split_once(".hook_")?;
        let layer = layer.parse().ok()?;
        let site = Site::ALL.into_iter().find(|s| s.name() == site)?;
        Some((layer, site))
    }
}

impl fmt::Display for Site {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Site {
    type Err = Error;

    /// The site called `name` ([`Site::name`]);
    /// [`LmError::UnknownSite`] for any other.
    fn from_str(name: &str) -> Result<Site, Error> {
        Site::ALL
            .into_iter()
            .find(|s| s.name() == name)
            .ok_or_else(|| {
                LmError::UnknownSite {
                    name: name.to_owned(),
                }
                .into()
            })
    }
}

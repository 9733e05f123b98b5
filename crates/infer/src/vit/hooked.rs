//! A vision transformer behind the one model interface
//! ([`crate::model`]): images' pixel values in, each block's output per
//! image out as a recording keeps it (the CLS row if the model has one,
//! then the patches row by row; register tokens left out).

use super::{Family, VisionModel};
use crate::Result;
use crate::model::{HookedModel, Inputs, ModelKind, Site};

/// Whether `model_type` (a `config.json`'s) names a vision transformer
/// this crate runs.
pub fn is_vision_model_type(model_type: &str) -> bool {
    super::config::vision_family_of(model_type).is_some()
}

impl Family {
    /// The family a recording's `vit_family` names (`dinov2`, `clip`,
    /// `siglip`).
    pub fn from_name(name: &str) -> Option<Family> {
        [Family::Dinov2, Family::Clip, Family::Siglip]
            .into_iter()
            .find(|f| f.name() == name)
    }
}

impl HookedModel for VisionModel {
    fn kind(&self) -> ModelKind {
        ModelKind::Vision
    }

    fn family(&self) -> &'static str {
        VisionModel::family(self).name()
    }

    fn name(&self) -> String {
        format!("a {} vision transformer", HookedModel::family(self))
    }

    fn has_cls(&self) -> bool {
        VisionModel::has_cls(self)
    }

    fn is_int8(&self) -> bool {
        VisionModel::is_int8(self)
    }

    fn width(&self) -> usize {
        VisionModel::width(self)
    }

    fn blocks(&self) -> usize {
        VisionModel::blocks(self)
    }

    fn activations(
        &self,
        inputs: Inputs<'_>,
        blocks: &[usize],
        site: Site,
    ) -> Result<Vec<Vec<f32>>> {
        crate::model::check_site(self, site)?;
        let Inputs::Pixels {
            values,
            images,
            height,
            width,
        } = inputs
        else {
            return Err(crate::model::not_its_input(self, "token windows"));
        };
        let states = self.hidden_states(values, images, height, width, blocks)?;
        Ok(self.recorded_rows(&states, images))
    }
}

impl VisionModel {
    /// Each image's recorded rows, `[blocks, cls + patches, width]`
    /// flattened, from the model's `[images, sequence, width]` states.
    fn recorded_rows(&self, states: &[Vec<f32>], images: usize) -> Vec<Vec<f32>> {
        let width = VisionModel::width(self);
        let cls = usize::from(VisionModel::has_cls(self));
        let sequence = states
            .first()
            .map_or(0, |s| s.len() / width / images.max(1));
        // Transformers' order: CLS, registers, patches.
        let patches = cls + self.registers()..sequence;
        (0..images)
            .map(|image| {
                let mut rows = Vec::with_capacity(states.len() * (cls + patches.len()) * width);
                for state in states {
                    let first = image * sequence;
                    if cls == 1 {
                        rows.extend_from_slice(&state[first * width..(first + 1) * width]);
                    }
                    rows.extend_from_slice(
                        &state[(first + patches.start) * width..(first + patches.end) * width],
                    );
                }
                rows
            })
            .collect()
    }
}

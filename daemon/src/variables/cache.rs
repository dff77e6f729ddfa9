//! The plan cache: plans (and failures, which depend on the DWARF alone) by image,
//! address, inline depth and variable, shared by every rank of a daemon.

use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, Mutex};

use crate::images::MappedImage;
use crate::symbols::Symbolizer;

use super::frames::SourceAt;
use super::plan::{Plan, resolve};
use super::unreadable::{Unreadable, error};

/// Plans kept at most (distinct address and variable pairs); the cache starts over beyond.
const MAX_PLANS: usize = 100_000;

/// Plans by (image, address in the image, inline depth, variable name), shared by every
/// rank of a daemon. Failures are kept too: they depend on the DWARF alone. Owned by the
/// caller of the reads (the daemon keeps one beside its sampler), not by the sampler:
/// sampling knows nothing of variables.
#[derive(Default)]
pub struct VariableCache {
    plans: Mutex<HashMap<PlanKey, Result<Arc<Plan>, Unreadable>>>,
}

impl fmt::Debug for VariableCache {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("VariableCache")
            .field("plans", &self.len())
            .finish()
    }
}

impl VariableCache {
    /// How many plans (and failures) are cached.
    pub fn len(&self) -> usize {
        self.plans.lock().map(|p| p.len()).unwrap_or(0)
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The plan of `variable` in source frame `at` (at `svma` of `mapped`), from the cache or
    /// from DWARF.
    pub(super) fn plan(
        &self,
        symbolizer: &Symbolizer,
        mapped: &MappedImage,
        svma: u64,
        at: &SourceAt,
        variable: &str,
    ) -> Result<Arc<Plan>, Unreadable> {
        let no_debug = || {
            error(format!(
                "no debug information for {} (build with -g)",
                mapped.path
            ))
        };
        let image = symbolizer.image_id(mapped).ok_or_else(no_debug)?;
        let key = PlanKey {
            image,
            svma,
            depth: at.depth,
            variable: variable.to_string(),
        };
        let cache = &self.plans;
        if let Some(hit) = cache.lock().ok().and_then(|c| c.get(&key).cloned()) {
            return hit;
        }
        let planned = symbolizer
            .with_dwarf(mapped, |view| {
                resolve(view, svma, at, variable, &mapped.path)
            })
            .unwrap_or_else(|| Err(no_debug()))
            .map(Arc::new);
        if let Ok(mut c) = cache.lock() {
            if c.len() >= MAX_PLANS {
                c.clear();
            }
            c.insert(key, planned.clone());
        }
        planned
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct PlanKey {
    image: u32,
    svma: u64,
    depth: usize,
    variable: String,
}

//! Rust bindings of `libalphamoe_router.so.0`: the routing of a
//! Mixture-of-Experts layer (top-k expert ids, gate weights and the
//! block-aligned route plan) in one GPU kernel launch, with a CPU reference
//! of the same contract.
//!
//! [`ffi`] holds the raw C declarations of both headers; the rest is a safe
//! wrapper: [`Router`] owns a validated parameter set ([`Params`], every
//! routing flavour included), [`Plan`] owns host buffers sized for it, and
//! every failure is an [`Error`] carrying the library's [`Status`] and its
//! message.
//!
//! ```no_run
//! let router = alphamoe_router::Router::new(64, 4, 16, 2)?;
//! let logits: Vec<f32> = (0..2 * 64).map(|i| (i % 7) as f32).collect();
//! let plan = router.route_host(2, &logits)?;
//! assert_eq!(plan.topk_ids().len(), 2 * 4);
//! # Ok::<(), alphamoe_router::Error>(())
//! ```

/// A C enum as a newtype over its `int` value, so that a value from a newer
/// library stays representable; `Debug` prints the header's name.
macro_rules! c_enum {
    ($(#[$meta:meta])* $name:ident { $($variant:ident = $c_name:ident,)* }) => {
        $(#[$meta])*
        #[derive(Clone, Copy, PartialEq, Eq, Hash, Default)]
        pub struct $name(pub i32);

        impl $name {
            $(pub const $variant: $name = $name(crate::ffi::$c_name as i32);)*

            /// The header's name of the value, e.g. `ALPHAMOE_SCORING_SIGMOID`;
            /// None for a value this crate does not know.
            pub fn name(self) -> Option<&'static str> {
                match self {
                    $($name::$variant => Some(stringify!($c_name)),)*
                    _ => None,
                }
            }
        }

        impl std::fmt::Debug for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                match self.name() {
                    Some(name) => f.write_str(name),
                    None => write!(f, "{}({})", stringify!($name), self.0),
                }
            }
        }
    };
}

pub mod ffi;

mod device;
mod plan;
mod router;
mod status;

pub use device::{
    device_attributes, device_count, device_describe, entry_point_names, kernel_images, kernel_names,
    specialization_name, DeviceAttributes, DeviceBuffers, DeviceInfo,
};
pub use plan::Plan;
pub use router::{Inputs, Logits, LogitsType, Params, Router, Scoring, Selection, Sizes, Specialization};
pub use status::{Error, Result, Status};

/// Slot `top_k - 1` is always expert `num_experts - 1` (the shared expert).
pub const FLAG_SHARED_EXPERT: u32 = ffi::ALPHAMOE_FLAG_SHARED_EXPERT;
/// Fill the plan with the sentinel and `-1` from the live length up to capacity.
pub const FLAG_TAIL_FILL: u32 = ffi::ALPHAMOE_FLAG_TAIL_FILL;
/// Programmatic dependent launch (sm_90 and newer).
pub const FLAG_PDL: u32 = ffi::ALPHAMOE_FLAG_PDL;
/// Weights are not renormalized over the selected experts.
pub const FLAG_NO_RENORMALIZE: u32 = ffi::ALPHAMOE_FLAG_NO_RENORMALIZE;
/// Sigmoid or sqrt-softplus scoring: [`Inputs::correction_bias`] steers the choice of experts and groups.
pub const FLAG_CORRECTION_BIAS: u32 = ffi::ALPHAMOE_FLAG_CORRECTION_BIAS;
/// Expert parallelism by map: [`Inputs::expert_map`] gives each expert its local id or -1.
pub const FLAG_EXPERT_MAP: u32 = ffi::ALPHAMOE_FLAG_EXPERT_MAP;
/// Hash routing: each token's experts are its row of [`Inputs::hash_table`].
pub const FLAG_HASH_ROUTING: u32 = ffi::ALPHAMOE_FLAG_HASH_ROUTING;
/// Redundant experts (EPLB): each chosen logical expert becomes one of its
/// physical replicas by [`Inputs::logical_to_physical`] and [`Inputs::replica_count`].
pub const FLAG_REDUNDANT_EXPERTS: u32 = ffi::ALPHAMOE_FLAG_REDUNDANT_EXPERTS;
/// Every flag above.
pub const FLAG_ALL: u32 = ffi::ALPHAMOE_FLAG_ALL;

/// Limits of [`Params`].
pub const MAX_EXPERTS: usize = ffi::ALPHAMOE_MAX_EXPERTS as usize;
pub const MAX_TOP_K: usize = ffi::ALPHAMOE_MAX_TOP_K as usize;
pub const MAX_BLOCK_M: usize = ffi::ALPHAMOE_MAX_BLOCK_M as usize;

use std::ffi::CStr;

/// The library's version, e.g. "0.3.0".
pub fn version() -> &'static str {
    // SAFETY: a static NUL-terminated string owned by the library.
    unsafe { CStr::from_ptr(ffi::alphamoe_version_string()) }
        .to_str()
        .unwrap_or("")
}

/// The library's version as `major * 10000 + minor * 100 + patch`.
pub fn version_number() -> u32 {
    // SAFETY: no arguments, no state.
    unsafe { ffi::alphamoe_version_number() }
}

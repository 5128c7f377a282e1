//! Rust bindings of `libalphamoe_router.so.0`: the routing of a
//! Mixture-of-Experts layer (top-k expert ids, gate weights and the
//! block-aligned route plan) in one GPU kernel launch, with a CPU reference
//! of the same contract.
//!
//! [`ffi`] holds the raw C declarations; the rest is a safe wrapper:
//! [`Router`] owns a validated parameter set, [`Plan`] owns host buffers
//! sized for it, and every failure is an [`Error`] carrying the library's
//! [`Status`] and its message.
//!
//! ```no_run
//! let router = alphamoe_router::Router::new(64, 4, 16, 2)?;
//! let logits: Vec<f32> = (0..2 * 64).map(|i| (i % 7) as f32).collect();
//! let plan = router.route_host(2, &logits)?;
//! assert_eq!(plan.topk_ids().len(), 2 * 4);
//! # Ok::<(), alphamoe_router::Error>(())
//! ```

pub mod ffi;

mod device;
mod plan;
mod router;
mod status;

pub use device::{device_count, kernel_images, kernel_names, DeviceBuffers};
pub use plan::Plan;
pub use router::{Params, Router, Sizes, FLAG_PDL, FLAG_SHARED_EXPERT, FLAG_TAIL_FILL};
pub use status::{Error, Result, Status};

use std::ffi::CStr;

/// The library's version, e.g. "0.1.0".
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

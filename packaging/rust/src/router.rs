//! A validated parameter set and the calls made with it.
use crate::device::DeviceBuffers;
use crate::ffi;
use crate::plan::Plan;
use crate::status::{Error, Result, Status};
use std::mem::size_of;
use std::os::raw::c_void;
use std::ptr::NonNull;

/// Slot `top_k - 1` is always expert `num_experts - 1` (the shared expert).
pub const FLAG_SHARED_EXPERT: u32 = 0x1;
/// Fill the plan with the sentinel and `-1` from the live length up to capacity.
pub const FLAG_TAIL_FILL: u32 = 0x2;
/// Programmatic dependent launch (sm_90 and newer).
pub const FLAG_PDL: u32 = 0x4;

/// What a router is created from. Counts outside the library's limits are
/// rejected by [`Router::with_params`] with the matching status.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Params {
    /// E, 1..=512.
    pub num_experts: usize,
    /// k, 1..=min(E, 16).
    pub top_k: usize,
    /// Rows per expert block, 1..=256.
    pub block_m: usize,
    /// The largest token count a call will pass; sizes the plan.
    pub max_tokens: usize,
    /// Elements between rows of logits; 0 means `num_experts`.
    pub logits_row_stride: usize,
    /// `FLAG_*` bits.
    pub flags: u32,
}

impl Params {
    pub fn new(num_experts: usize, top_k: usize, block_m: usize, max_tokens: usize) -> Params {
        Params { num_experts, top_k, block_m, max_tokens, logits_row_stride: 0, flags: 0 }
    }
}

/// Sizes of every output and of the workspace for a router's `max_tokens`
/// (elements, except the workspace's bytes).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Sizes {
    pub topk_ids: usize,
    pub topk_weights: usize,
    /// The plan's capacity.
    pub sorted_token_ids: usize,
    pub expert_ids: usize,
    pub expert_counts: usize,
    pub expert_offsets: usize,
    pub pair_to_sorted: usize,
    pub workspace_bytes: usize,
    pub workspace_alignment: usize,
}

/// A validated, immutable parameter set (`alphamoe_router`).
#[derive(Debug)]
pub struct Router {
    raw: NonNull<ffi::alphamoe_router>,
    params: ffi::alphamoe_params,
    sizes: ffi::alphamoe_sizes,
}

// SAFETY: the library documents a router as immutable and thread-safe to share.
unsafe impl Send for Router {}
unsafe impl Sync for Router {}

/// Counts beyond i32 saturate, so the library rejects them with its own status.
fn to_i32(n: usize) -> i32 {
    i32::try_from(n).unwrap_or(i32::MAX)
}

fn to_usize(n: i64) -> usize {
    usize::try_from(n).unwrap_or(0)
}

impl Router {
    /// A router for `num_experts` experts, top-`top_k`, blocks of `block_m`
    /// rows and up to `max_tokens` tokens a call.
    pub fn new(num_experts: usize, top_k: usize, block_m: usize, max_tokens: usize) -> Result<Router> {
        Router::with_params(&Params::new(num_experts, top_k, block_m, max_tokens))
    }

    pub fn with_params(params: &Params) -> Result<Router> {
        let raw_params = ffi::alphamoe_params {
            struct_size: size_of::<ffi::alphamoe_params>(),
            num_experts: to_i32(params.num_experts),
            top_k: to_i32(params.top_k),
            block_m: to_i32(params.block_m),
            max_tokens: to_i32(params.max_tokens),
            logits_row_stride: i64::try_from(params.logits_row_stride).unwrap_or(i64::MAX),
            flags: params.flags,
            force_specialization: 0,
        };
        let mut raw: *mut ffi::alphamoe_router = std::ptr::null_mut();
        // SAFETY: both pointers are valid for the call.
        Status(unsafe { ffi::alphamoe_router_create(&raw_params, &mut raw) }).check()?;
        let raw = NonNull::new(raw).ok_or_else(|| Error::from_status(Status::NULL_POINTER))?;
        let mut router = Router {
            raw,
            params: ffi::alphamoe_params { struct_size: size_of::<ffi::alphamoe_params>(), ..Default::default() },
            sizes: ffi::alphamoe_sizes { struct_size: size_of::<ffi::alphamoe_sizes>(), ..Default::default() },
        };
        // SAFETY: a live router and structs whose struct_size is their own size.
        Status(unsafe { ffi::alphamoe_router_get_params(router.raw.as_ptr(), &mut router.params) }).check()?;
        Status(unsafe { ffi::alphamoe_router_sizes(router.raw.as_ptr(), &mut router.sizes) }).check()?;
        Ok(router)
    }

    /// The router's parameters as the library normalized them (a zero row
    /// stride reads back as `num_experts`).
    pub fn params(&self) -> Params {
        let p = &self.params;
        Params {
            num_experts: p.num_experts as usize,
            top_k: p.top_k as usize,
            block_m: p.block_m as usize,
            max_tokens: p.max_tokens as usize,
            logits_row_stride: to_usize(p.logits_row_stride),
            flags: p.flags,
        }
    }

    pub fn sizes(&self) -> Sizes {
        let z = &self.sizes;
        Sizes {
            topk_ids: to_usize(z.topk_ids.elements),
            topk_weights: to_usize(z.topk_weights.elements),
            sorted_token_ids: to_usize(z.sorted_token_ids.elements),
            expert_ids: to_usize(z.expert_ids.elements),
            expert_counts: to_usize(z.expert_counts.elements),
            expert_offsets: to_usize(z.expert_offsets.elements),
            pair_to_sorted: to_usize(z.pair_to_sorted.elements),
            workspace_bytes: to_usize(z.workspace.bytes),
            workspace_alignment: to_usize(z.workspace_alignment),
        }
    }

    /// Host buffers for every output of this router, optional ones included.
    pub fn plan(&self) -> Plan {
        Plan::for_router(self)
    }

    /// Routes `num_tokens` rows of `logits` on the CPU (the contract's
    /// reference) into a new plan.
    pub fn route_host(&self, num_tokens: usize, logits: &[f32]) -> Result<Plan> {
        let mut plan = self.plan();
        self.route_host_into(num_tokens, logits, &mut plan)?;
        Ok(plan)
    }

    /// Like [`Router::route_host`], reusing `plan`'s buffers. On error no
    /// element of `plan` has changed.
    pub fn route_host_into(&self, num_tokens: usize, logits: &[f32], plan: &mut Plan) -> Result<()> {
        if num_tokens > self.params.max_tokens as usize {
            return Err(Error::from_status(Status::NUM_TOKENS));
        }
        self.check_logits_len(num_tokens, logits.len())?;
        plan.check_fits(self)?;
        let buffers = plan.raw_buffers();
        // SAFETY: logits holds num_tokens rows (checked above), every buffer
        // holds at least what the sizing says (check_fits) and stays borrowed
        // for the call.
        Status(unsafe {
            ffi::alphamoe_route_host(self.raw.as_ptr(), to_i32(num_tokens), logits.as_ptr(), &buffers)
        })
        .check()?;
        plan.set_num_tokens(num_tokens);
        Ok(())
    }

    /// One kernel launch on `stream` (null: the current context's default
    /// stream), asynchronous.
    ///
    /// # Safety
    /// `logits` and every address in `buffers` must be device memory of the
    /// stream's context, of the sizes [`Router::sizes`] gives (logits:
    /// `num_tokens` rows), alive until the launch completes; the workspace
    /// must have been zeroed once and be used by one call at a time.
    pub unsafe fn route(&self, num_tokens: usize, logits: u64, buffers: &DeviceBuffers, stream: *mut c_void) -> Result<()> {
        let raw = buffers.raw();
        Status(ffi::alphamoe_route(
            self.raw.as_ptr(),
            to_i32(num_tokens),
            logits as usize as *const f32,
            &raw,
            stream as *mut ffi::CUstream_st,
        ))
        .check()
    }

    /// The raw handle, for calls this wrapper does not cover.
    pub fn as_ptr(&self) -> *const ffi::alphamoe_router {
        self.raw.as_ptr()
    }

    fn check_logits_len(&self, num_tokens: usize, len: usize) -> Result<()> {
        if num_tokens == 0 {
            return Ok(());
        }
        let stride = to_usize(self.params.logits_row_stride);
        let needed = (num_tokens - 1) * stride + self.params.num_experts as usize;
        if len < needed {
            return Err(Error::invalid_argument(format!(
                "logits holds {} values, {} tokens need {}",
                len, num_tokens, needed
            )));
        }
        Ok(())
    }
}

impl Drop for Router {
    fn drop(&mut self) {
        // SAFETY: created by alphamoe_router_create, destroyed once.
        unsafe { ffi::alphamoe_router_destroy(self.raw.as_ptr()) }
    }
}

//! A validated parameter set and the calls made with it.
use crate::device::{DeviceAttributes, DeviceBuffers};
use crate::ffi;
use crate::plan::Plan;
use crate::status::{Error, Result, Status};
use std::mem::size_of;
use std::os::raw::c_void;
use std::ptr::NonNull;

c_enum! {
    /// How logits become scores (`alphamoe_scoring`).
    Scoring {
        SOFTMAX = ALPHAMOE_SCORING_SOFTMAX,
        SIGMOID = ALPHAMOE_SCORING_SIGMOID,
        SQRT_SOFTPLUS = ALPHAMOE_SCORING_SQRT_SOFTPLUS,
    }
}

c_enum! {
    /// Element type of the logits (`alphamoe_logits_type`).
    LogitsType {
        F32 = ALPHAMOE_LOGITS_F32,
        BF16 = ALPHAMOE_LOGITS_BF16,
        F16 = ALPHAMOE_LOGITS_F16,
    }
}

c_enum! {
    /// Which kernel specialization routes a call (`alphamoe_specialization`,
    /// alphamoe/router_diagnostics.h). Forcing one is for tests that compare them.
    Specialization {
        AUTO = ALPHAMOE_SPECIALIZATION_AUTO,
        TINY = ALPHAMOE_SPECIALIZATION_TINY,
        SMALL = ALPHAMOE_SPECIALIZATION_SMALL,
        LARGE = ALPHAMOE_SPECIALIZATION_LARGE,
    }
}

/// What a router is created from (`alphamoe_params`). Values outside the
/// library's limits are rejected by [`Router::with_params`] with the
/// matching status; zero in a flavour field means the first version's
/// behaviour (README, "What a call computes").
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Params {
    /// E, 1..=2048.
    pub num_experts: usize,
    /// k, 1..=min(E, 32).
    pub top_k: usize,
    /// Rows per expert block, 1..=256.
    pub block_m: usize,
    /// The largest token count a call will pass; sizes the plan.
    pub max_tokens: usize,
    /// Elements between rows of logits; 0 means `num_experts`.
    pub logits_row_stride: usize,
    /// `FLAG_*` bits.
    pub flags: u32,
    /// Diagnostics only: AUTO lets the library choose.
    pub force_specialization: Specialization,
    pub scoring: Scoring,
    pub logits_type: LogitsType,
    /// Expert groups (0 or 1: none); must divide `num_experts`.
    pub num_groups: usize,
    /// Groups kept per token, 1..=num_groups; 0 means all.
    pub topk_groups: usize,
    /// Multiplies every weight; finite, > 0; 0 means 1.
    pub routed_scaling_factor: f32,
    /// Expert parallelism by range: global id of local expert 0.
    pub local_expert_begin: usize,
    /// Local experts L, the plan's expert count; 0 means all `num_experts`.
    pub local_expert_count: usize,
    /// Rows of [`Inputs::hash_table`] with `FLAG_HASH_ROUTING` (>= 1); 0 without it.
    pub vocab_size: usize,
    /// Physical experts P with `FLAG_REDUNDANT_EXPERTS` (1..=2048); 0 without it.
    pub num_physical_experts: usize,
    /// Replica slots R per logical expert with `FLAG_REDUNDANT_EXPERTS` (1..=P); 0 without it.
    pub replica_slots: usize,
}

impl Params {
    /// The renormalized fp32 softmax top-k of `num_experts` experts.
    pub fn new(num_experts: usize, top_k: usize, block_m: usize, max_tokens: usize) -> Params {
        Params {
            num_experts,
            top_k,
            block_m,
            max_tokens,
            logits_row_stride: 0,
            flags: 0,
            force_specialization: Specialization::AUTO,
            scoring: Scoring::SOFTMAX,
            logits_type: LogitsType::F32,
            num_groups: 0,
            topk_groups: 0,
            routed_scaling_factor: 0.0,
            local_expert_begin: 0,
            local_expert_count: 0,
            vocab_size: 0,
            num_physical_experts: 0,
            replica_slots: 0,
        }
    }

    fn raw(&self) -> ffi::alphamoe_params {
        // Every field named, so that a field added to ffi must be mirrored here.
        ffi::alphamoe_params {
            struct_size: size_of::<ffi::alphamoe_params>(),
            num_experts: to_i32(self.num_experts),
            top_k: to_i32(self.top_k),
            block_m: to_i32(self.block_m),
            max_tokens: to_i32(self.max_tokens),
            logits_row_stride: i64::try_from(self.logits_row_stride).unwrap_or(i64::MAX),
            flags: self.flags,
            force_specialization: self.force_specialization.0,
            scoring: self.scoring.0,
            logits_type: self.logits_type.0,
            num_groups: to_i32(self.num_groups),
            topk_groups: to_i32(self.topk_groups),
            routed_scaling_factor: self.routed_scaling_factor,
            local_expert_begin: to_i32(self.local_expert_begin),
            local_expert_count: to_i32(self.local_expert_count),
            reserved: 0,
            vocab_size: to_i32(self.vocab_size),
            num_physical_experts: to_i32(self.num_physical_experts),
            replica_slots: to_i32(self.replica_slots),
            reserved2: 0,
        }
    }

    fn from_raw(raw: &ffi::alphamoe_params) -> Params {
        let ffi::alphamoe_params {
            struct_size: _,
            num_experts,
            top_k,
            block_m,
            max_tokens,
            logits_row_stride,
            flags,
            force_specialization,
            scoring,
            logits_type,
            num_groups,
            topk_groups,
            routed_scaling_factor,
            local_expert_begin,
            local_expert_count,
            reserved: _,
            vocab_size,
            num_physical_experts,
            replica_slots,
            reserved2: _,
        } = *raw;
        Params {
            num_experts: to_usize(num_experts),
            top_k: to_usize(top_k),
            block_m: to_usize(block_m),
            max_tokens: to_usize(max_tokens),
            logits_row_stride: to_usize(logits_row_stride),
            flags,
            force_specialization: Specialization(force_specialization),
            scoring: Scoring(scoring),
            logits_type: LogitsType(logits_type),
            num_groups: to_usize(num_groups),
            topk_groups: to_usize(topk_groups),
            routed_scaling_factor,
            local_expert_begin: to_usize(local_expert_begin),
            local_expert_count: to_usize(local_expert_count),
            vocab_size: to_usize(vocab_size),
            num_physical_experts: to_usize(num_physical_experts),
            replica_slots: to_usize(replica_slots),
        }
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
    pub num_tokens_post_padded: usize,
    /// L, the local experts (E without expert parallelism).
    pub expert_counts: usize,
    pub expert_offsets: usize,
    pub pair_to_sorted: usize,
    pub workspace_bytes: usize,
    pub workspace_alignment: usize,
}

impl Sizes {
    fn from_raw(raw: &ffi::alphamoe_sizes) -> Sizes {
        let ffi::alphamoe_sizes {
            struct_size: _,
            topk_ids,
            topk_weights,
            sorted_token_ids,
            expert_ids,
            num_tokens_post_padded,
            expert_counts,
            expert_offsets,
            pair_to_sorted,
            workspace,
            workspace_alignment,
        } = *raw;
        Sizes {
            topk_ids: to_usize(topk_ids.elements),
            topk_weights: to_usize(topk_weights.elements),
            sorted_token_ids: to_usize(sorted_token_ids.elements),
            expert_ids: to_usize(expert_ids.elements),
            num_tokens_post_padded: to_usize(num_tokens_post_padded.elements),
            expert_counts: to_usize(expert_counts.elements),
            expert_offsets: to_usize(expert_offsets.elements),
            pair_to_sorted: to_usize(pair_to_sorted.elements),
            workspace_bytes: to_usize(workspace.bytes),
            workspace_alignment: to_usize(workspace_alignment),
        }
    }
}

/// How a call runs: the specialization, grid, block, image and entry point
/// of its one launch (`alphamoe_selection`, alphamoe/router_diagnostics.h).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Selection {
    pub specialization: Specialization,
    pub grid_ctas: i32,
    pub block_threads: i32,
    /// Every CTA resident at once (a cluster or a cooperative launch).
    pub cooperative: bool,
    /// The embedded image used: 90 for sm_90a, 100, 103.
    pub image_arch: i32,
    pub tokens_per_cta: i32,
    /// > 0: the grid launches as one thread-block cluster of this many
    /// CTAs; 0: it does not.
    pub cluster_ctas: i32,
    /// The kernel: `kernel_names()[kernel_index]`.
    pub kernel_index: usize,
    /// The function launched: `entry_point_names()[entry_point_index]`.
    pub entry_point_index: usize,
}

impl Selection {
    fn from_raw(raw: &ffi::alphamoe_selection) -> Selection {
        let ffi::alphamoe_selection {
            struct_size: _,
            specialization,
            grid_ctas,
            block_threads,
            cooperative,
            image_arch,
            tokens_per_cta,
            cluster_ctas,
            kernel_index,
            entry_point_index,
        } = *raw;
        Selection {
            specialization: Specialization(specialization),
            grid_ctas,
            block_threads,
            cooperative: cooperative != 0,
            image_arch,
            tokens_per_cta,
            cluster_ctas,
            kernel_index: to_usize(kernel_index),
            entry_point_index: to_usize(entry_point_index),
        }
    }

    fn raw(&self) -> ffi::alphamoe_selection {
        ffi::alphamoe_selection {
            struct_size: size_of::<ffi::alphamoe_selection>(),
            specialization: self.specialization.0,
            grid_ctas: self.grid_ctas,
            block_threads: self.block_threads,
            cooperative: i32::from(self.cooperative),
            image_arch: self.image_arch,
            tokens_per_cta: self.tokens_per_cta,
            cluster_ctas: self.cluster_ctas,
            kernel_index: to_i32(self.kernel_index),
            entry_point_index: to_i32(self.entry_point_index),
        }
    }
}

/// The logits of one call, of the router's `logits_type`: bf16 and fp16 as
/// their bit patterns.
#[derive(Clone, Copy, Debug)]
pub enum Logits<'a> {
    F32(&'a [f32]),
    Bf16(&'a [u16]),
    F16(&'a [u16]),
}

impl<'a> From<&'a [f32]> for Logits<'a> {
    fn from(values: &'a [f32]) -> Logits<'a> {
        Logits::F32(values)
    }
}

impl Logits<'_> {
    fn kind(&self) -> (LogitsType, usize, *const c_void) {
        match self {
            Logits::F32(v) => (LogitsType::F32, v.len(), v.as_ptr() as *const c_void),
            Logits::Bf16(v) => (LogitsType::BF16, v.len(), v.as_ptr() as *const c_void),
            Logits::F16(v) => (LogitsType::F16, v.len(), v.as_ptr() as *const c_void),
        }
    }
}

/// Per-call inputs besides the logits, `[num_experts]` each when given but
/// hash routing's.
#[derive(Clone, Copy, Debug, Default)]
pub struct Inputs<'a> {
    /// Needed with `FLAG_CORRECTION_BIAS`.
    pub correction_bias: Option<&'a [f32]>,
    /// Needed with `FLAG_EXPERT_MAP`: each expert's local id, or -1.
    pub expert_map: Option<&'a [i32]>,
    /// Needed with `FLAG_HASH_ROUTING`: each token's id, `[M]`.
    pub token_ids: Option<&'a [i32]>,
    /// Needed with `FLAG_HASH_ROUTING`: `[vocab_size, top_k]` expert ids.
    pub hash_table: Option<&'a [i32]>,
    /// Needed with `FLAG_REDUNDANT_EXPERTS`: `[num_experts, replica_slots]` physical ids.
    pub logical_to_physical: Option<&'a [i32]>,
    /// Needed with `FLAG_REDUNDANT_EXPERTS`: each logical expert's replica count.
    pub replica_count: Option<&'a [i32]>,
    /// Optional with `FLAG_REDUNDANT_EXPERTS`: `[num_physical_experts]` counters the
    /// call adds each pair to (cells, so that inputs stay shared references).
    pub physical_load: Option<&'a [std::cell::Cell<i32>]>,
}

/// A validated, immutable parameter set (`alphamoe_router`).
#[derive(Debug)]
pub struct Router {
    raw: NonNull<ffi::alphamoe_router>,
    params: Params,
    sizes: Sizes,
}

// SAFETY: the library documents a router as immutable and thread-safe to share.
unsafe impl Send for Router {}
unsafe impl Sync for Router {}

/// Counts beyond i32 saturate, so the library rejects them with its own status.
pub(crate) fn to_i32(n: usize) -> i32 {
    i32::try_from(n).unwrap_or(i32::MAX)
}

pub(crate) fn to_usize<T: TryInto<usize>>(n: T) -> usize {
    n.try_into().unwrap_or(0)
}

impl Router {
    /// A router for `num_experts` experts, top-`top_k`, blocks of `block_m`
    /// rows and up to `max_tokens` tokens a call.
    pub fn new(num_experts: usize, top_k: usize, block_m: usize, max_tokens: usize) -> Result<Router> {
        Router::with_params(&Params::new(num_experts, top_k, block_m, max_tokens))
    }

    pub fn with_params(params: &Params) -> Result<Router> {
        let raw_params = params.raw();
        let mut raw: *mut ffi::alphamoe_router = std::ptr::null_mut();
        // SAFETY: both pointers are valid for the call.
        Status(unsafe { ffi::alphamoe_router_create(&raw_params, &mut raw) }).check()?;
        let raw = NonNull::new(raw).ok_or_else(|| Error::from_status(Status::NULL_POINTER))?;
        let mut normalized = ffi::alphamoe_params { struct_size: size_of::<ffi::alphamoe_params>(), ..Default::default() };
        let mut sizes = ffi::alphamoe_sizes { struct_size: size_of::<ffi::alphamoe_sizes>(), ..Default::default() };
        // SAFETY: a live router and structs whose struct_size is their own size.
        let got = unsafe {
            Status(ffi::alphamoe_router_get_params(raw.as_ptr(), &mut normalized))
                .check()
                .and_then(|_| Status(ffi::alphamoe_router_sizes(raw.as_ptr(), &mut sizes)).check())
        };
        if let Err(e) = got {
            // SAFETY: created above, destroyed once.
            unsafe { ffi::alphamoe_router_destroy(raw.as_ptr()) };
            return Err(e);
        }
        Ok(Router { raw, params: Params::from_raw(&normalized), sizes: Sizes::from_raw(&sizes) })
    }

    /// The router's parameters as the library normalized them: the row
    /// stride resolved, num_groups at least 1, topk_groups resolved, the
    /// scaling factor 1 for 0, local_expert_count E for 0.
    pub fn params(&self) -> Params {
        self.params
    }

    pub fn sizes(&self) -> Sizes {
        self.sizes
    }

    /// Host buffers for every output of this router, optional ones included.
    pub fn plan(&self) -> Plan {
        Plan::for_router(self)
    }

    /// Routes `num_tokens` rows of fp32 `logits` on the CPU (the contract's
    /// reference) into a new plan.
    pub fn route_host(&self, num_tokens: usize, logits: &[f32]) -> Result<Plan> {
        let mut plan = self.plan();
        self.route_host_into(num_tokens, logits, &mut plan)?;
        Ok(plan)
    }

    /// Like [`Router::route_host`], reusing `plan`'s buffers. On error no
    /// element of `plan` has changed.
    pub fn route_host_into(&self, num_tokens: usize, logits: &[f32], plan: &mut Plan) -> Result<()> {
        self.route_host_with(num_tokens, Logits::F32(logits), &Inputs::default(), plan)
    }

    /// The CPU reference for every flavour: logits of the router's type,
    /// the correction bias and the expert map. `logits` holds exactly
    /// `num_tokens` rows (the last may end at `num_experts`). On error no
    /// element of `plan` has changed.
    pub fn route_host_with(&self, num_tokens: usize, logits: Logits, inputs: &Inputs, plan: &mut Plan) -> Result<()> {
        if num_tokens > self.params.max_tokens {
            return Err(Error::from_status(Status::NUM_TOKENS));
        }
        let (kind, len, pointer) = logits.kind();
        if kind != self.params.logits_type {
            return Err(Error::with_detail(
                Status::LOGITS_TYPE,
                format!("the logits are {:?}, the router takes {:?}", kind, self.params.logits_type),
            ));
        }
        self.check_logits_len(num_tokens, len)?;
        self.check_inputs(inputs)?;
        plan.check_fits(self)?;
        let buffers = plan.raw_buffers(inputs);
        // SAFETY: logits holds num_tokens rows of the router's type and the
        // inputs num_experts values (checked above); every buffer holds at
        // least what the sizing says (check_fits) and stays borrowed for the call.
        Status(unsafe { ffi::alphamoe_route_host(self.raw.as_ptr(), to_i32(num_tokens), pointer, &buffers) })
            .check()?;
        plan.set_num_tokens(num_tokens);
        Ok(())
    }

    /// One kernel launch on `stream` (null: the current context's default
    /// stream), asynchronous.
    ///
    /// # Safety
    /// `logits` (of the router's logits_type) and every address in
    /// `buffers` must be device memory of the stream's context, of the
    /// sizes [`Router::sizes`] gives (logits: `num_tokens` rows; bias and
    /// map: `num_experts` values), alive until the launch completes; the
    /// workspace must have been zeroed once and be used by one call at a time.
    pub unsafe fn route(&self, num_tokens: usize, logits: u64, buffers: &DeviceBuffers, stream: *mut c_void) -> Result<()> {
        let raw = buffers.raw();
        Status(ffi::alphamoe_route(
            self.raw.as_ptr(),
            to_i32(num_tokens),
            logits as usize as *const c_void,
            &raw,
            stream as *mut ffi::CUstream_st,
        ))
        .check()
    }

    /// [`Router::route`] with one of the plans [`Router::candidates`] gives
    /// for the stream's context (its attributes as the library reads them);
    /// `Status::INVALID_ARGUMENT` for any other plan. For benchmarks and
    /// tests that compare entry points.
    ///
    /// # Safety
    /// As for [`Router::route`].
    pub unsafe fn route_with_plan(
        &self,
        num_tokens: usize,
        logits: u64,
        buffers: &DeviceBuffers,
        plan: &Selection,
        stream: *mut c_void,
    ) -> Result<()> {
        let (raw, plan) = (buffers.raw(), plan.raw());
        Status(ffi::alphamoe_route_with_plan(
            self.raw.as_ptr(),
            to_i32(num_tokens),
            logits as usize as *const c_void,
            &raw,
            &plan,
            stream as *mut ffi::CUstream_st,
        ))
        .check()
    }

    /// How a call with `num_tokens` would run on a device (a context) with
    /// these attributes: exactly what [`Router::route`] launches there. A
    /// pure function: `Status::UNSUPPORTED_FLAVOUR` says the GPU kernels do
    /// not implement the router's flavour.
    pub fn select(&self, num_tokens: usize, device: &DeviceAttributes) -> Result<Selection> {
        let attributes = device.raw();
        let mut out = ffi::alphamoe_selection { struct_size: size_of::<ffi::alphamoe_selection>(), ..Default::default() };
        // SAFETY: valid pointers for the call.
        Status(unsafe { ffi::alphamoe_router_select(self.raw.as_ptr(), to_i32(num_tokens), &attributes, &mut out) })
            .check()?;
        Ok(Selection::from_raw(&out))
    }

    /// Every plan that computes the same results as [`Router::select`]'s on
    /// the same grid, that one first, then the other entry points that can
    /// run the call. A pure function, like [`Router::select`].
    pub fn candidates(&self, num_tokens: usize, device: &DeviceAttributes) -> Result<Vec<Selection>> {
        let (attributes, num_tokens) = (device.raw(), to_i32(num_tokens));
        let mut count = 0i32;
        // SAFETY: capacity 0 with a NULL array asks for the count only.
        Status(unsafe {
            ffi::alphamoe_router_candidates(self.raw.as_ptr(), num_tokens, &attributes, std::ptr::null_mut(), 0, &mut count)
        })
        .check()?;
        let empty = ffi::alphamoe_selection { struct_size: size_of::<ffi::alphamoe_selection>(), ..Default::default() };
        let mut plans = vec![empty; to_usize(count)];
        // SAFETY: plans holds `count` selections, each with its struct_size set.
        Status(unsafe {
            ffi::alphamoe_router_candidates(self.raw.as_ptr(), num_tokens, &attributes, plans.as_mut_ptr(), count, &mut count)
        })
        .check()?;
        plans.truncate(to_usize(count));
        Ok(plans.iter().map(Selection::from_raw).collect())
    }

    /// The raw handle, for calls this wrapper does not cover.
    pub fn as_ptr(&self) -> *const ffi::alphamoe_router {
        self.raw.as_ptr()
    }

    /// Exactly `num_tokens` rows: a longer or shorter slice is another shape
    /// and is refused rather than read as one.
    fn check_logits_len(&self, num_tokens: usize, len: usize) -> Result<()> {
        let (stride, e) = (self.params.logits_row_stride, self.params.num_experts);
        let fits = if num_tokens == 0 {
            len == 0
        } else {
            let last_row = (num_tokens - 1).checked_mul(stride).and_then(|n| n.checked_add(e));
            Some(len) == last_row || Some(len) == num_tokens.checked_mul(stride)
        };
        if fits {
            Ok(())
        } else {
            Err(Error::invalid_argument(format!(
                "logits hold {} values, {} tokens of {} experts (row stride {}) need {} or {}",
                len,
                num_tokens,
                e,
                stride,
                num_tokens.saturating_sub(1).saturating_mul(stride).saturating_add(e),
                num_tokens.saturating_mul(stride)
            )))
        }
    }

    fn check_inputs(&self, inputs: &Inputs) -> Result<()> {
        let e = self.params.num_experts;
        let lengths = [("correction_bias", inputs.correction_bias.map(<[f32]>::len)), ("expert_map", inputs.expert_map.map(<[i32]>::len))];
        for (name, len) in lengths {
            if let Some(len) = len.filter(|&len| len != e) {
                return Err(Error::invalid_argument(format!("{} holds {} values, the router has {} experts", name, len, e)));
            }
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

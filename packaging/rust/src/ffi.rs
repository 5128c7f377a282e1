//! Raw declarations of `alphamoe/router.h` and `alphamoe/router_diagnostics.h`,
//! written by hand (no bindgen).
//!
//! Every constant, struct and function of both headers, under its C name. Later
//! library versions only append fields; each struct's `struct_size` tells
//! the library how much of it this crate knows, so set it to `size_of` the
//! struct here. The test `tests/header.rs` compares [`CONSTANTS`],
//! [`layouts`] and [`FUNCTIONS`] with what a C compiler makes of the
//! installed headers.
#![allow(non_camel_case_types)]

use std::mem::{size_of, MaybeUninit};
use std::os::raw::{c_char, c_void};
use std::ptr::addr_of;

/// `alphamoe_status` (a C enum: `int`).
pub type alphamoe_status = i32;
/// `alphamoe_specialization` (a C enum: `int`).
pub type alphamoe_specialization = i32;
/// `alphamoe_scoring` (a C enum; the params field is `int32_t`).
pub type alphamoe_scoring = i32;
/// `alphamoe_logits_type` (a C enum; the params field is `int32_t`).
pub type alphamoe_logits_type = i32;

/// Declares constants and lists them, name and value, in `CONSTANTS`.
macro_rules! c_constants {
    ($($name:ident: $ty:ty = $value:expr;)*) => {
        $(pub const $name: $ty = $value;)*
        /// Every constant above with its value, for the header test.
        pub const CONSTANTS: &[(&str, i64)] = &[$((stringify!($name), $value as i64)),*];
    };
}

c_constants! {
    ALPHAMOE_OK: alphamoe_status = 0;
    ALPHAMOE_ERROR_NULL_POINTER: alphamoe_status = 1;
    ALPHAMOE_ERROR_STRUCT_SIZE: alphamoe_status = 2;
    ALPHAMOE_ERROR_NUM_EXPERTS: alphamoe_status = 3;
    ALPHAMOE_ERROR_TOP_K: alphamoe_status = 4;
    ALPHAMOE_ERROR_BLOCK_M: alphamoe_status = 5;
    ALPHAMOE_ERROR_MAX_TOKENS: alphamoe_status = 6;
    ALPHAMOE_ERROR_NUM_TOKENS: alphamoe_status = 7;
    ALPHAMOE_ERROR_SHARED_EXPERT: alphamoe_status = 8;
    ALPHAMOE_ERROR_ROW_STRIDE: alphamoe_status = 9;
    ALPHAMOE_ERROR_FLAGS: alphamoe_status = 10;
    ALPHAMOE_ERROR_SPECIALIZATION: alphamoe_status = 11;
    ALPHAMOE_ERROR_ALIGNMENT: alphamoe_status = 12;
    ALPHAMOE_ERROR_CAPACITY: alphamoe_status = 13;
    ALPHAMOE_ERROR_WORKSPACE: alphamoe_status = 14;
    ALPHAMOE_ERROR_NO_DRIVER: alphamoe_status = 15;
    ALPHAMOE_ERROR_NO_DEVICE: alphamoe_status = 16;
    ALPHAMOE_ERROR_NO_IMAGE: alphamoe_status = 17;
    ALPHAMOE_ERROR_UNSUPPORTED_DEVICE: alphamoe_status = 18;
    ALPHAMOE_ERROR_CUDA: alphamoe_status = 19;
    ALPHAMOE_ERROR_OUT_OF_MEMORY: alphamoe_status = 20;
    ALPHAMOE_ERROR_INVALID_ARGUMENT: alphamoe_status = 21;
    ALPHAMOE_ERROR_SCORING: alphamoe_status = 22;
    ALPHAMOE_ERROR_LOGITS_TYPE: alphamoe_status = 23;
    ALPHAMOE_ERROR_GROUPS: alphamoe_status = 24;
    ALPHAMOE_ERROR_SCALING_FACTOR: alphamoe_status = 25;
    ALPHAMOE_ERROR_EXPERT_PARALLEL: alphamoe_status = 26;
    ALPHAMOE_ERROR_UNSUPPORTED_FLAVOUR: alphamoe_status = 27;
    ALPHAMOE_ERROR_INVALID_HANDLE: alphamoe_status = 28;
    ALPHAMOE_ERROR_HASH_ROUTING: alphamoe_status = 29;
    ALPHAMOE_ERROR_REDUNDANT_EXPERTS: alphamoe_status = 30;

    ALPHAMOE_MAX_EXPERTS: i32 = 2048;
    ALPHAMOE_MAX_TOP_K: i32 = 32;
    ALPHAMOE_MAX_BLOCK_M: i32 = 256;

    ALPHAMOE_FLAG_SHARED_EXPERT: u32 = 0x1;
    ALPHAMOE_FLAG_TAIL_FILL: u32 = 0x2;
    ALPHAMOE_FLAG_PDL: u32 = 0x4;
    ALPHAMOE_FLAG_NO_RENORMALIZE: u32 = 0x8;
    ALPHAMOE_FLAG_CORRECTION_BIAS: u32 = 0x10;
    ALPHAMOE_FLAG_EXPERT_MAP: u32 = 0x20;
    ALPHAMOE_FLAG_HASH_ROUTING: u32 = 0x40;
    ALPHAMOE_FLAG_REDUNDANT_EXPERTS: u32 = 0x80;
    ALPHAMOE_FLAG_ALL: u32 = 0xff;

    ALPHAMOE_SCORING_SOFTMAX: alphamoe_scoring = 0;
    ALPHAMOE_SCORING_SIGMOID: alphamoe_scoring = 1;
    ALPHAMOE_SCORING_SQRT_SOFTPLUS: alphamoe_scoring = 2;

    ALPHAMOE_LOGITS_F32: alphamoe_logits_type = 0;
    ALPHAMOE_LOGITS_BF16: alphamoe_logits_type = 1;
    ALPHAMOE_LOGITS_F16: alphamoe_logits_type = 2;

    ALPHAMOE_SPECIALIZATION_AUTO: alphamoe_specialization = 0;
    ALPHAMOE_SPECIALIZATION_TINY: alphamoe_specialization = 1;
    ALPHAMOE_SPECIALIZATION_SMALL: alphamoe_specialization = 2;
    ALPHAMOE_SPECIALIZATION_LARGE: alphamoe_specialization = 3;
}

/// Opaque `struct CUstream_st`: what `cudaStream_t` and `CUstream` point to.
#[repr(C)]
pub struct CUstream_st {
    _private: [u8; 0],
}

/// Opaque `alphamoe_router`.
#[repr(C)]
pub struct alphamoe_router {
    _private: [u8; 0],
}

/// Declares `#[repr(C)]` structs and lists their layout in `layouts()`.
macro_rules! c_structs {
    ($($(#[$meta:meta])* pub struct $name:ident { $(pub $field:ident: $ty:ty,)* })*) => {
        $($(#[$meta])* #[repr(C)] pub struct $name { $(pub $field: $ty,)* })*

        /// (struct, size, [(field, offset, size)]) of every struct above as
        /// this crate lays it out, for the header test.
        pub fn layouts() -> Vec<(&'static str, usize, Vec<(&'static str, usize, usize)>)> {
            vec![$({
                let value = MaybeUninit::<$name>::uninit();
                let base = value.as_ptr() as usize;
                // SAFETY: addresses of fields of an uninitialized value, never read.
                let fields = vec![$((stringify!($field),
                    unsafe { addr_of!((*value.as_ptr()).$field) } as usize - base, size_of::<$ty>())),*];
                (stringify!($name), size_of::<$name>(), fields)
            }),*]
        }
    };
}

c_structs! {
    #[derive(Clone, Copy, Debug, Default)]
    pub struct alphamoe_params {
        pub struct_size: usize,
        pub num_experts: i32,
        pub top_k: i32,
        pub block_m: i32,
        pub max_tokens: i32,
        pub logits_row_stride: i64,
        pub flags: u32,
        pub force_specialization: i32,
        pub scoring: i32,
        pub logits_type: i32,
        pub num_groups: i32,
        pub topk_groups: i32,
        pub routed_scaling_factor: f32,
        pub local_expert_begin: i32,
        pub local_expert_count: i32,
        pub reserved: u32,
        pub vocab_size: i32,
        pub num_physical_experts: i32,
        pub replica_slots: i32,
        pub reserved2: u32,
    }

    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
    pub struct alphamoe_extent {
        pub elements: i64,
        pub bytes: i64,
    }

    #[derive(Clone, Copy, Debug, Default)]
    pub struct alphamoe_sizes {
        pub struct_size: usize,
        pub topk_ids: alphamoe_extent,
        pub topk_weights: alphamoe_extent,
        pub sorted_token_ids: alphamoe_extent,
        pub expert_ids: alphamoe_extent,
        pub num_tokens_post_padded: alphamoe_extent,
        pub expert_counts: alphamoe_extent,
        pub expert_offsets: alphamoe_extent,
        pub pair_to_sorted: alphamoe_extent,
        pub workspace: alphamoe_extent,
        pub workspace_alignment: i64,
    }

    #[derive(Clone, Copy, Debug)]
    pub struct alphamoe_buffers {
        pub struct_size: usize,
        pub topk_ids: *mut i32,
        pub topk_weights: *mut f32,
        pub sorted_token_ids: *mut i32,
        pub expert_ids: *mut i32,
        pub num_tokens_post_padded: *mut i32,
        pub expert_counts: *mut i32,
        pub expert_offsets: *mut i32,
        pub pair_to_sorted: *mut i32,
        pub sorted_token_ids_capacity: i64,
        pub expert_ids_capacity: i64,
        pub workspace: *mut c_void,
        pub workspace_bytes: usize,
        pub correction_bias: *const f32,
        pub expert_map: *const i32,
        pub token_ids: *const i32,
        pub hash_table: *const i32,
        pub logical_to_physical: *const i32,
        pub replica_count: *const i32,
        pub physical_load: *mut i32,
    }

    #[derive(Clone, Copy, Debug, Default)]
    pub struct alphamoe_device_attributes {
        pub struct_size: usize,
        pub compute_capability: i32,
        pub multiprocessor_count: i32,
        pub cooperative_ctas_per_sm: i32,
        pub cooperative_launch: i32,
        pub max_cluster_ctas: i32,
    }

    #[derive(Clone, Copy, Debug, Default)]
    pub struct alphamoe_selection {
        pub struct_size: usize,
        pub specialization: alphamoe_specialization,
        pub grid_ctas: i32,
        pub block_threads: i32,
        pub cooperative: i32,
        pub image_arch: i32,
        pub tokens_per_cta: i32,
        pub cluster_ctas: i32,
        pub kernel_index: i32,
        pub entry_point_index: i32,
    }
}

/// Declares C functions and lists their names in `FUNCTIONS`.
macro_rules! c_functions {
    ($($(#[$meta:meta])* pub fn $name:ident($($arg:ident: $ty:ty),* $(,)?) $(-> $ret:ty)?;)*) => {
        extern "C" {
            $($(#[$meta])* pub fn $name($($arg: $ty),*) $(-> $ret)?;)*
        }
        /// The name of every function above, for the header test.
        pub const FUNCTIONS: &[&str] = &[$(stringify!($name)),*];
    };
}

c_functions! {
    pub fn alphamoe_status_string(status: alphamoe_status) -> *const c_char;
    pub fn alphamoe_version_number() -> u32;
    pub fn alphamoe_version_string() -> *const c_char;

    pub fn alphamoe_router_create(params: *const alphamoe_params, out: *mut *mut alphamoe_router)
        -> alphamoe_status;
    pub fn alphamoe_router_destroy(router: *mut alphamoe_router);
    pub fn alphamoe_router_get_params(router: *const alphamoe_router, out: *mut alphamoe_params)
        -> alphamoe_status;
    pub fn alphamoe_router_sizes(router: *const alphamoe_router, out: *mut alphamoe_sizes) -> alphamoe_status;

    /// `logits` is of the router's logits_type.
    pub fn alphamoe_route(
        router: *const alphamoe_router,
        num_tokens: i32,
        logits: *const c_void,
        buffers: *const alphamoe_buffers,
        stream: *mut CUstream_st,
    ) -> alphamoe_status;
    /// `logits` is of the router's logits_type.
    pub fn alphamoe_route_host(
        router: *const alphamoe_router,
        num_tokens: i32,
        logits: *const c_void,
        buffers: *const alphamoe_buffers,
    ) -> alphamoe_status;

    pub fn alphamoe_device_count(count: *mut i32) -> alphamoe_status;
    pub fn alphamoe_device_describe(
        device_ordinal: i32,
        name: *mut c_char,
        name_capacity: usize,
        compute_capability: *mut i32,
        image_arch: *mut i32,
    ) -> alphamoe_status;

    // alphamoe/router_diagnostics.h
    pub fn alphamoe_device_attributes_query(device_ordinal: i32, out: *mut alphamoe_device_attributes)
        -> alphamoe_status;
    pub fn alphamoe_specialization_name(specialization: alphamoe_specialization) -> *const c_char;
    pub fn alphamoe_router_select(
        router: *const alphamoe_router,
        num_tokens: i32,
        device: *const alphamoe_device_attributes,
        out: *mut alphamoe_selection,
    ) -> alphamoe_status;
    pub fn alphamoe_router_candidates(
        router: *const alphamoe_router,
        num_tokens: i32,
        device: *const alphamoe_device_attributes,
        plans: *mut alphamoe_selection,
        capacity: i32,
        count: *mut i32,
    ) -> alphamoe_status;
    /// `logits` is of the router's logits_type.
    pub fn alphamoe_route_with_plan(
        router: *const alphamoe_router,
        num_tokens: i32,
        logits: *const c_void,
        buffers: *const alphamoe_buffers,
        plan: *const alphamoe_selection,
        stream: *mut CUstream_st,
    ) -> alphamoe_status;
    pub fn alphamoe_kernel_count() -> i32;
    pub fn alphamoe_entry_point_count() -> i32;
    pub fn alphamoe_kernel_name(index: i32) -> *const c_char;
    pub fn alphamoe_entry_point_name(index: i32) -> *const c_char;
    pub fn alphamoe_kernel_images(index: i32, archs: *mut i32, capacity: i32, count: *mut i32) -> alphamoe_status;
}

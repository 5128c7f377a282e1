//! Raw declarations of `alphamoe/router.h`, written by hand (no bindgen).
//!
//! The structs mirror the header field by field. Later library versions
//! only append fields; each struct's `struct_size` tells the library how
//! much of it this crate knows, so set it to `size_of` the struct here.
#![allow(non_camel_case_types)]

use std::os::raw::{c_char, c_void};

/// `alphamoe_status` (a C enum: `int`).
pub type alphamoe_status = i32;
/// `alphamoe_specialization` (a C enum: `int`).
pub type alphamoe_specialization = i32;

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

#[repr(C)]
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
}

#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct alphamoe_extent {
    pub elements: i64,
    pub bytes: i64,
}

#[repr(C)]
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

#[repr(C)]
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
}

#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct alphamoe_device_attributes {
    pub struct_size: usize,
    pub compute_capability: i32,
    pub multiprocessor_count: i32,
    pub cooperative_ctas_per_sm: i32,
    pub cooperative_launch: i32,
}

#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct alphamoe_selection {
    pub struct_size: usize,
    pub specialization: alphamoe_specialization,
    pub grid_ctas: i32,
    pub block_threads: i32,
    pub cooperative: i32,
    pub image_arch: i32,
    pub tokens_per_cta: i32,
}

extern "C" {
    pub fn alphamoe_status_string(status: alphamoe_status) -> *const c_char;
    pub fn alphamoe_version_number() -> u32;
    pub fn alphamoe_version_string() -> *const c_char;

    pub fn alphamoe_router_create(
        params: *const alphamoe_params,
        out: *mut *mut alphamoe_router,
    ) -> alphamoe_status;
    pub fn alphamoe_router_destroy(router: *mut alphamoe_router);
    pub fn alphamoe_router_get_params(
        router: *const alphamoe_router,
        out: *mut alphamoe_params,
    ) -> alphamoe_status;
    pub fn alphamoe_router_sizes(
        router: *const alphamoe_router,
        out: *mut alphamoe_sizes,
    ) -> alphamoe_status;

    pub fn alphamoe_route(
        router: *const alphamoe_router,
        num_tokens: i32,
        logits: *const f32,
        buffers: *const alphamoe_buffers,
        stream: *mut CUstream_st,
    ) -> alphamoe_status;
    pub fn alphamoe_route_host(
        router: *const alphamoe_router,
        num_tokens: i32,
        logits: *const f32,
        buffers: *const alphamoe_buffers,
    ) -> alphamoe_status;

    pub fn alphamoe_device_attributes_query(
        device_ordinal: i32,
        out: *mut alphamoe_device_attributes,
    ) -> alphamoe_status;
    pub fn alphamoe_specialization_name(specialization: alphamoe_specialization) -> *const c_char;
    pub fn alphamoe_router_select(
        router: *const alphamoe_router,
        num_tokens: i32,
        device: *const alphamoe_device_attributes,
        out: *mut alphamoe_selection,
    ) -> alphamoe_status;

    pub fn alphamoe_kernel_name(index: i32) -> *const c_char;
    pub fn alphamoe_kernel_images(
        index: i32,
        archs: *mut i32,
        capacity: i32,
        count: *mut i32,
    ) -> alphamoe_status;
    pub fn alphamoe_device_count(count: *mut i32) -> alphamoe_status;
    pub fn alphamoe_device_describe(
        device_ordinal: i32,
        name: *mut c_char,
        name_capacity: usize,
        compute_capability: *mut i32,
        image_arch: *mut i32,
    ) -> alphamoe_status;
}

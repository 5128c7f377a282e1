//! Device-side buffers of `Router::route` and what the library knows about
//! kernels and devices.
use crate::ffi;
use crate::router::{to_i32, Specialization};
use crate::status::{Result, Status};
use std::ffi::CStr;
use std::mem::size_of;
use std::os::raw::c_char;

/// Device addresses (`CUdeviceptr` values) of one call's outputs, inputs
/// besides the logits, and the workspace. Optional ones are 0 to skip them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DeviceBuffers {
    pub topk_ids: u64,
    pub topk_weights: u64,
    pub sorted_token_ids: u64,
    /// Elements allocated at `sorted_token_ids`.
    pub sorted_token_ids_capacity: usize,
    pub expert_ids: u64,
    /// Elements allocated at `expert_ids`.
    pub expert_ids_capacity: usize,
    pub num_tokens_post_padded: u64,
    pub expert_counts: u64,
    pub expert_offsets: u64,
    pub pair_to_sorted: u64,
    /// Zeroed once after allocation, then reused by every call.
    pub workspace: u64,
    pub workspace_bytes: usize,
    /// fp32 `[num_experts]`, needed with `FLAG_CORRECTION_BIAS`.
    pub correction_bias: u64,
    /// int32 `[num_experts]`, needed with `FLAG_EXPERT_MAP`.
    pub expert_map: u64,
    /// int32 `[M]`, needed with `FLAG_HASH_ROUTING`.
    pub token_ids: u64,
    /// int32 `[vocab_size, top_k]`, needed with `FLAG_HASH_ROUTING`.
    pub hash_table: u64,
    /// int32 `[num_experts, replica_slots]`, needed with `FLAG_REDUNDANT_EXPERTS`.
    pub logical_to_physical: u64,
    /// int32 `[num_experts]`, needed with `FLAG_REDUNDANT_EXPERTS`.
    pub replica_count: u64,
    /// int32 `[num_physical_experts]`, optional with `FLAG_REDUNDANT_EXPERTS`.
    pub physical_load: u64,
}

impl DeviceBuffers {
    pub(crate) fn raw(&self) -> ffi::alphamoe_buffers {
        let ptr = |address: u64| address as usize as *mut i32;
        ffi::alphamoe_buffers {
            struct_size: size_of::<ffi::alphamoe_buffers>(),
            topk_ids: ptr(self.topk_ids),
            topk_weights: self.topk_weights as usize as *mut f32,
            sorted_token_ids: ptr(self.sorted_token_ids),
            expert_ids: ptr(self.expert_ids),
            num_tokens_post_padded: ptr(self.num_tokens_post_padded),
            expert_counts: ptr(self.expert_counts),
            expert_offsets: ptr(self.expert_offsets),
            pair_to_sorted: ptr(self.pair_to_sorted),
            sorted_token_ids_capacity: i64::try_from(self.sorted_token_ids_capacity).unwrap_or(i64::MAX),
            expert_ids_capacity: i64::try_from(self.expert_ids_capacity).unwrap_or(i64::MAX),
            workspace: self.workspace as usize as *mut std::os::raw::c_void,
            workspace_bytes: self.workspace_bytes,
            correction_bias: self.correction_bias as usize as *const f32,
            expert_map: self.expert_map as usize as *const i32,
            token_ids: self.token_ids as usize as *const i32,
            hash_table: self.hash_table as usize as *const i32,
            logical_to_physical: self.logical_to_physical as usize as *const i32,
            replica_count: self.replica_count as usize as *const i32,
            physical_load: ptr(self.physical_load),
        }
    }
}

/// A device as the variant selection reads it (`alphamoe_device_attributes`,
/// alphamoe/router_diagnostics.h); made by hand, it asks
/// [`Router::select`](crate::Router::select) and
/// [`Router::candidates`](crate::Router::candidates) about a device this
/// machine lacks.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DeviceAttributes {
    /// major * 10 + minor, e.g. 90.
    pub compute_capability: i32,
    pub multiprocessor_count: i32,
    /// Resident router CTAs per multiprocessor, >= 1.
    pub cooperative_ctas_per_sm: i32,
    pub cooperative_launch: bool,
    /// The most router CTAs one thread-block cluster holds: 16 where the
    /// device schedules clusters beyond the portable size, 8, or 1 (none);
    /// 0 reads as 8, the portable size.
    pub max_cluster_ctas: i32,
}

impl DeviceAttributes {
    pub(crate) fn raw(&self) -> ffi::alphamoe_device_attributes {
        ffi::alphamoe_device_attributes {
            struct_size: size_of::<ffi::alphamoe_device_attributes>(),
            compute_capability: self.compute_capability,
            multiprocessor_count: self.multiprocessor_count,
            cooperative_ctas_per_sm: self.cooperative_ctas_per_sm,
            cooperative_launch: i32::from(self.cooperative_launch),
            max_cluster_ctas: self.max_cluster_ctas,
        }
    }
}

/// The attributes of CUDA device `ordinal`.
pub fn device_attributes(ordinal: usize) -> Result<DeviceAttributes> {
    let mut raw = ffi::alphamoe_device_attributes {
        struct_size: size_of::<ffi::alphamoe_device_attributes>(),
        ..Default::default()
    };
    // SAFETY: a valid out pointer whose struct_size is its own size.
    Status(unsafe { ffi::alphamoe_device_attributes_query(to_i32(ordinal), &mut raw) }).check()?;
    let ffi::alphamoe_device_attributes {
        struct_size: _,
        compute_capability,
        multiprocessor_count,
        cooperative_ctas_per_sm,
        cooperative_launch,
        max_cluster_ctas,
    } = raw;
    Ok(DeviceAttributes {
        compute_capability,
        multiprocessor_count,
        cooperative_ctas_per_sm,
        cooperative_launch: cooperative_launch != 0,
        max_cluster_ctas,
    })
}

/// A device's name, compute capability and the image arch it would run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeviceInfo {
    pub name: String,
    pub compute_capability: i32,
    /// 0 when the library holds no image for it.
    pub image_arch: i32,
}

/// Name, compute capability and image arch of CUDA device `ordinal`.
pub fn device_describe(ordinal: usize) -> Result<DeviceInfo> {
    let mut name = [0 as c_char; 256];
    let (mut compute_capability, mut image_arch) = (0i32, 0i32);
    // SAFETY: `name` holds name.len() bytes; valid out pointers.
    Status(unsafe {
        ffi::alphamoe_device_describe(to_i32(ordinal), name.as_mut_ptr(), name.len(), &mut compute_capability, &mut image_arch)
    })
    .check()?;
    // SAFETY: the library writes a NUL-terminated name within the capacity.
    let name = unsafe { CStr::from_ptr(name.as_ptr()) }.to_string_lossy().into_owned();
    Ok(DeviceInfo { name, compute_capability, image_arch })
}

/// CUDA devices the driver sees; an error (`Status::NO_DRIVER`,
/// `Status::NO_DEVICE`) when there is no driver or no device.
pub fn device_count() -> Result<usize> {
    let mut count = 0i32;
    // SAFETY: a valid out pointer.
    Status(unsafe { ffi::alphamoe_device_count(&mut count) }).check()?;
    Ok(count.max(0) as usize)
}

/// The library's name of a specialization ("auto", "tiny", "small",
/// "large"); None for other values.
pub fn specialization_name(specialization: Specialization) -> Option<&'static str> {
    // SAFETY: NULL or a static string.
    let name = unsafe { ffi::alphamoe_specialization_name(specialization.0) };
    (!name.is_null()).then(|| unsafe { CStr::from_ptr(name) }.to_str().unwrap_or(""))
}

/// Names of the kernels the library holds, e.g. "tiny_routed", in the
/// order of [`Selection::kernel_index`](crate::Selection::kernel_index).
pub fn kernel_names() -> Vec<String> {
    // SAFETY: no arguments, no state.
    names(unsafe { ffi::alphamoe_kernel_count() }, ffi::alphamoe_kernel_name)
}

/// Names of the entry points the library holds (the functions in the
/// kernels' images, e.g. "alphamoe_large_routed_staged_w16"), in the order
/// of [`Selection::entry_point_index`](crate::Selection::entry_point_index).
pub fn entry_point_names() -> Vec<String> {
    // SAFETY: no arguments, no state.
    names(unsafe { ffi::alphamoe_entry_point_count() }, ffi::alphamoe_entry_point_name)
}

/// `name_of(0..count)`, up to the first NULL.
fn names(count: i32, name_of: unsafe extern "C" fn(i32) -> *const c_char) -> Vec<String> {
    (0..count)
        .map_while(|i| {
            // SAFETY: NULL past the end, else a static string.
            let name = unsafe { name_of(i) };
            (!name.is_null()).then(|| unsafe { CStr::from_ptr(name) }.to_string_lossy().into_owned())
        })
        .collect()
}

/// The architectures (90, 100, 103) of the images embedded for kernel `index`.
pub fn kernel_images(index: usize) -> Result<Vec<i32>> {
    let index = to_i32(index);
    let mut count = 0i32;
    // SAFETY: capacity 0 with a NULL array asks for the count only.
    Status(unsafe { ffi::alphamoe_kernel_images(index, std::ptr::null_mut(), 0, &mut count) }).check()?;
    let mut archs = vec![0i32; count.max(0) as usize];
    // SAFETY: archs holds `count` values.
    Status(unsafe { ffi::alphamoe_kernel_images(index, archs.as_mut_ptr(), count, &mut count) }).check()?;
    archs.truncate(count.max(0) as usize);
    Ok(archs)
}

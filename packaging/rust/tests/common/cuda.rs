//! Just enough of the CUDA driver API, opened at run time like the library
//! opens it, to hold device buffers for a route call.
use std::ffi::CString;
use std::os::raw::{c_char, c_int, c_uint, c_void};

#[link(name = "dl")]
extern "C" {
    fn dlopen(filename: *const c_char, flags: c_int) -> *mut c_void;
    fn dlsym(handle: *mut c_void, symbol: *const c_char) -> *mut c_void;
}
const RTLD_NOW: c_int = 2;
const CUDA_SUCCESS: c_int = 0;

type CuInit = unsafe extern "C" fn(c_uint) -> c_int;
type CuDeviceGetCount = unsafe extern "C" fn(*mut c_int) -> c_int;
type CuDeviceGet = unsafe extern "C" fn(*mut c_int, c_int) -> c_int;
type CuPrimaryCtxRetain = unsafe extern "C" fn(*mut *mut c_void, c_int) -> c_int;
type CuCtxSetCurrent = unsafe extern "C" fn(*mut c_void) -> c_int;
type CuMemAlloc = unsafe extern "C" fn(*mut u64, usize) -> c_int;
type CuMemFree = unsafe extern "C" fn(u64) -> c_int;
type CuMemcpyHtoD = unsafe extern "C" fn(u64, *const c_void, usize) -> c_int;
type CuMemcpyDtoH = unsafe extern "C" fn(*mut c_void, u64, usize) -> c_int;
type CuMemsetD8 = unsafe extern "C" fn(u64, u8, usize) -> c_int;
type CuCtxSynchronize = unsafe extern "C" fn() -> c_int;

/// Whether this machine can route on a GPU.
pub enum Gpu {
    /// libcuda.so.1 cannot be opened: the library must say NO_DRIVER.
    NoDriver(String),
    /// The driver sees no device: NO_DEVICE (or NO_DRIVER).
    NoDevice(String),
    /// Device 0's primary context is current.
    Ready(Cuda),
}

pub struct Cuda {
    mem_alloc: CuMemAlloc,
    mem_free: CuMemFree,
    htod: CuMemcpyHtoD,
    dtoh: CuMemcpyDtoH,
    memset: CuMemsetD8,
    synchronize: CuCtxSynchronize,
}

unsafe fn symbol<T>(lib: *mut c_void, name: &str) -> Result<T, String> {
    let cname = CString::new(name).unwrap();
    let p = dlsym(lib, cname.as_ptr());
    if p.is_null() {
        return Err(format!("libcuda.so.1 lacks {}", name));
    }
    Ok(std::mem::transmute_copy(&p))
}

fn check(what: &str, r: c_int) -> Result<(), String> {
    if r == CUDA_SUCCESS {
        Ok(())
    } else {
        Err(format!("{} failed with CUresult {}", what, r))
    }
}

/// Opens the driver ($ALPHAMOE_CUDA_DRIVER, else libcuda.so.1) and makes
/// device 0 current. Panics when a driver with a device fails to set up:
/// that is a broken machine, not a machine without a GPU.
pub fn open() -> Gpu {
    let path = std::env::var("ALPHAMOE_CUDA_DRIVER").ok().filter(|p| !p.is_empty());
    let name = CString::new(path.unwrap_or_else(|| "libcuda.so.1".to_string())).unwrap();
    // SAFETY: dlopen/dlsym on a NUL-terminated name; the handle is never closed.
    unsafe {
        let lib = dlopen(name.as_ptr(), RTLD_NOW);
        if lib.is_null() {
            return Gpu::NoDriver(format!("{:?} cannot be opened", name));
        }
        let init: CuInit = match symbol(lib, "cuInit") {
            Ok(f) => f,
            Err(why) => return Gpu::NoDriver(why),
        };
        let count_fn: CuDeviceGetCount = symbol(lib, "cuDeviceGetCount").expect("cuDeviceGetCount");
        let r = init(0);
        if r != CUDA_SUCCESS {
            return Gpu::NoDevice(format!("cuInit failed with CUresult {}", r));
        }
        let mut count = 0;
        if count_fn(&mut count) != CUDA_SUCCESS || count < 1 {
            return Gpu::NoDevice("the driver sees no device".to_string());
        }
        let ready = (|| -> Result<Cuda, String> {
            let device_get: CuDeviceGet = symbol(lib, "cuDeviceGet")?;
            let retain: CuPrimaryCtxRetain = symbol(lib, "cuDevicePrimaryCtxRetain")?;
            let set_current: CuCtxSetCurrent = symbol(lib, "cuCtxSetCurrent")?;
            let mut device = 0;
            check("cuDeviceGet", device_get(&mut device, 0))?;
            let mut ctx = std::ptr::null_mut();
            check("cuDevicePrimaryCtxRetain", retain(&mut ctx, device))?;
            check("cuCtxSetCurrent", set_current(ctx))?;
            Ok(Cuda {
                mem_alloc: symbol(lib, "cuMemAlloc_v2")?,
                mem_free: symbol(lib, "cuMemFree_v2")?,
                htod: symbol(lib, "cuMemcpyHtoD_v2")?,
                dtoh: symbol(lib, "cuMemcpyDtoH_v2")?,
                memset: symbol(lib, "cuMemsetD8_v2")?,
                synchronize: symbol(lib, "cuCtxSynchronize")?,
            })
        })();
        match ready {
            Ok(cuda) => Gpu::Ready(cuda),
            Err(why) => panic!("{} devices visible but the driver cannot be used: {}", count, why),
        }
    }
}

/// Device memory freed on drop.
pub struct DeviceArray<'a> {
    cuda: &'a Cuda,
    pub address: u64,
    pub bytes: usize,
}

impl Cuda {
    /// `bytes` of device memory with every byte set to `fill`.
    pub fn alloc(&self, bytes: usize, fill: u8) -> DeviceArray<'_> {
        let mut address = 0u64;
        // SAFETY: valid out pointer; the address is used only through the driver.
        unsafe {
            check("cuMemAlloc", (self.mem_alloc)(&mut address, bytes.max(4))).unwrap();
            check("cuMemsetD8", (self.memset)(address, fill, bytes.max(4))).unwrap();
        }
        DeviceArray { cuda: self, address, bytes }
    }

    pub fn upload<T: Copy>(&self, values: &[T]) -> DeviceArray<'_> {
        let bytes = std::mem::size_of_val(values);
        let array = self.alloc(bytes, 0);
        // SAFETY: `values` holds `bytes` bytes, the allocation at least as many.
        unsafe { check("cuMemcpyHtoD", (self.htod)(array.address, values.as_ptr() as *const c_void, bytes)).unwrap() };
        array
    }

    pub fn synchronize(&self) -> Result<(), String> {
        // SAFETY: no arguments.
        check("cuCtxSynchronize", unsafe { (self.synchronize)() })
    }
}

impl DeviceArray<'_> {
    pub fn download<T: Copy + Default>(&self) -> Vec<T> {
        let mut values = vec![T::default(); self.bytes / std::mem::size_of::<T>()];
        // SAFETY: `values` holds at most `bytes` bytes of plain data.
        unsafe {
            check(
                "cuMemcpyDtoH",
                (self.cuda.dtoh)(values.as_mut_ptr() as *mut c_void, self.address, std::mem::size_of_val(&values[..])),
            )
            .unwrap()
        };
        values
    }
}

impl Drop for DeviceArray<'_> {
    fn drop(&mut self) {
        // SAFETY: allocated by cuMemAlloc, freed once.
        unsafe { (self.cuda.mem_free)(self.address) };
    }
}

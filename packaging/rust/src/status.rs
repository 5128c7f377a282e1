//! Statuses and the error type.
use crate::ffi;
use std::ffi::CStr;
use std::fmt;

c_enum! {
    /// An `alphamoe_status` value. A newer library may return values this
    /// crate has no constant for; they still carry the library's message.
    /// `Debug` prints the header's name, e.g. `ALPHAMOE_ERROR_TOP_K`.
    Status {
        OK = ALPHAMOE_OK,
        NULL_POINTER = ALPHAMOE_ERROR_NULL_POINTER,
        STRUCT_SIZE = ALPHAMOE_ERROR_STRUCT_SIZE,
        NUM_EXPERTS = ALPHAMOE_ERROR_NUM_EXPERTS,
        TOP_K = ALPHAMOE_ERROR_TOP_K,
        BLOCK_M = ALPHAMOE_ERROR_BLOCK_M,
        MAX_TOKENS = ALPHAMOE_ERROR_MAX_TOKENS,
        NUM_TOKENS = ALPHAMOE_ERROR_NUM_TOKENS,
        SHARED_EXPERT = ALPHAMOE_ERROR_SHARED_EXPERT,
        ROW_STRIDE = ALPHAMOE_ERROR_ROW_STRIDE,
        FLAGS = ALPHAMOE_ERROR_FLAGS,
        SPECIALIZATION = ALPHAMOE_ERROR_SPECIALIZATION,
        ALIGNMENT = ALPHAMOE_ERROR_ALIGNMENT,
        CAPACITY = ALPHAMOE_ERROR_CAPACITY,
        WORKSPACE = ALPHAMOE_ERROR_WORKSPACE,
        NO_DRIVER = ALPHAMOE_ERROR_NO_DRIVER,
        NO_DEVICE = ALPHAMOE_ERROR_NO_DEVICE,
        NO_IMAGE = ALPHAMOE_ERROR_NO_IMAGE,
        UNSUPPORTED_DEVICE = ALPHAMOE_ERROR_UNSUPPORTED_DEVICE,
        CUDA = ALPHAMOE_ERROR_CUDA,
        OUT_OF_MEMORY = ALPHAMOE_ERROR_OUT_OF_MEMORY,
        INVALID_ARGUMENT = ALPHAMOE_ERROR_INVALID_ARGUMENT,
        SCORING = ALPHAMOE_ERROR_SCORING,
        LOGITS_TYPE = ALPHAMOE_ERROR_LOGITS_TYPE,
        GROUPS = ALPHAMOE_ERROR_GROUPS,
        SCALING_FACTOR = ALPHAMOE_ERROR_SCALING_FACTOR,
        EXPERT_PARALLEL = ALPHAMOE_ERROR_EXPERT_PARALLEL,
        UNSUPPORTED_FLAVOUR = ALPHAMOE_ERROR_UNSUPPORTED_FLAVOUR,
        INVALID_HANDLE = ALPHAMOE_ERROR_INVALID_HANDLE,
        HASH_ROUTING = ALPHAMOE_ERROR_HASH_ROUTING,
        REDUNDANT_EXPERTS = ALPHAMOE_ERROR_REDUNDANT_EXPERTS,
    }
}

impl Status {
    /// The library's fixed message, e.g. "ALPHAMOE_ERROR_TOP_K: top_k must be ...".
    pub fn message(self) -> &'static str {
        // SAFETY: never NULL, a static string owned by the library.
        unsafe { CStr::from_ptr(ffi::alphamoe_status_string(self.0)) }
            .to_str()
            .unwrap_or("alphamoe_status_string returned non-UTF-8")
    }

    /// `Ok(())` for OK, else the error with the library's message.
    pub fn check(self) -> Result<()> {
        if self == Status::OK {
            Ok(())
        } else {
            Err(Error::from_status(self))
        }
    }
}

/// The name and the library's message, e.g. "ALPHAMOE_ERROR_TOP_K: top_k must be ...".
impl fmt::Display for Status {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.message())
    }
}

/// A failed call: the status and a message saying why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Error {
    status: Status,
    message: String,
}

pub type Result<T> = std::result::Result<T, Error>;

impl Error {
    /// The error the library reports for `status`, with its message.
    pub fn from_status(status: Status) -> Error {
        Error { status, message: status.message().to_string() }
    }

    /// An error found by the binding before calling the library: `status`'s
    /// message followed by what was wrong.
    pub(crate) fn with_detail(status: Status, what: String) -> Error {
        Error { status, message: format!("{}: {}", status.message(), what) }
    }

    pub(crate) fn invalid_argument(what: String) -> Error {
        Error::with_detail(Status::INVALID_ARGUMENT, what)
    }

    pub fn status(&self) -> Status {
        self.status
    }

    pub fn message(&self) -> &str {
        &self.message
    }
}

/// The status's name and message (and what the binding found wrong).
impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Error {}

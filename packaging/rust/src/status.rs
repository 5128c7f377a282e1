//! Statuses and the error type.
use crate::ffi;
use std::ffi::CStr;
use std::fmt;

/// An `alphamoe_status` value. A newer library may return values this crate
/// has no constant for; they still carry the library's message.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Status(pub i32);

impl Status {
    pub const OK: Status = Status(0);
    pub const NULL_POINTER: Status = Status(1);
    pub const STRUCT_SIZE: Status = Status(2);
    pub const NUM_EXPERTS: Status = Status(3);
    pub const TOP_K: Status = Status(4);
    pub const BLOCK_M: Status = Status(5);
    pub const MAX_TOKENS: Status = Status(6);
    pub const NUM_TOKENS: Status = Status(7);
    pub const SHARED_EXPERT: Status = Status(8);
    pub const ROW_STRIDE: Status = Status(9);
    pub const FLAGS: Status = Status(10);
    pub const SPECIALIZATION: Status = Status(11);
    pub const ALIGNMENT: Status = Status(12);
    pub const CAPACITY: Status = Status(13);
    pub const WORKSPACE: Status = Status(14);
    pub const NO_DRIVER: Status = Status(15);
    pub const NO_DEVICE: Status = Status(16);
    pub const NO_IMAGE: Status = Status(17);
    pub const UNSUPPORTED_DEVICE: Status = Status(18);
    pub const CUDA: Status = Status(19);
    pub const OUT_OF_MEMORY: Status = Status(20);
    pub const INVALID_ARGUMENT: Status = Status(21);

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

    /// An error found by the binding before calling the library.
    pub(crate) fn invalid_argument(what: String) -> Error {
        Error {
            status: Status::INVALID_ARGUMENT,
            message: format!("{}: {}", Status::INVALID_ARGUMENT.message(), what),
        }
    }

    pub fn status(&self) -> Status {
        self.status
    }

    pub fn message(&self) -> &str {
        &self.message
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Error {}

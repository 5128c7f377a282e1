package router

// #cgo pkg-config: alphamoe-router
// #include <alphamoe/router.h>
import "C"

// Status is an alphamoe_status value. A newer library may return values
// without a constant here; String still gives the library's message.
type Status int32

const (
	StatusOK                Status = 0
	StatusNullPointer       Status = 1
	StatusStructSize        Status = 2
	StatusNumExperts        Status = 3
	StatusTopK              Status = 4
	StatusBlockM            Status = 5
	StatusMaxTokens         Status = 6
	StatusNumTokens         Status = 7
	StatusSharedExpert      Status = 8
	StatusRowStride         Status = 9
	StatusFlags             Status = 10
	StatusSpecialization    Status = 11
	StatusAlignment         Status = 12
	StatusCapacity          Status = 13
	StatusWorkspace         Status = 14
	StatusNoDriver          Status = 15
	StatusNoDevice          Status = 16
	StatusNoImage           Status = 17
	StatusUnsupportedDevice Status = 18
	StatusCUDA              Status = 19
	StatusOutOfMemory       Status = 20
	StatusInvalidArgument   Status = 21
)

// String is the library's fixed message, e.g. "ALPHAMOE_ERROR_TOP_K: ...".
func (s Status) String() string {
	return C.GoString(C.alphamoe_status_string(C.alphamoe_status(s)))
}

// Error is a failed call: the status and a message saying why.
type Error struct {
	Status  Status
	Message string
}

func (e *Error) Error() string { return e.Message }

// Is makes errors.Is match any *Error of the same status, so the Err*
// values below serve as sentinels.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Status == e.Status
}

// Sentinels of the statuses a caller most often acts on.
var (
	ErrNoDriver        = statusError(StatusNoDriver)
	ErrNoDevice        = statusError(StatusNoDevice)
	ErrNoImage         = statusError(StatusNoImage)
	ErrInvalidArgument = statusError(StatusInvalidArgument)
)

func statusError(s Status) *Error {
	return &Error{Status: s, Message: s.String()}
}

// check turns a status into nil or an *Error.
func check(s C.alphamoe_status) error {
	if s == C.ALPHAMOE_OK {
		return nil
	}
	return statusError(Status(s))
}

package router

// #cgo pkg-config: alphamoe-router
// #include <alphamoe/router.h>
import "C"

import "strconv"

// Status is an alphamoe_status value. A newer library may return values
// without a constant here; Message still gives the library's message.
type Status int32

const (
	StatusOK                 Status = C.ALPHAMOE_OK
	StatusNullPointer        Status = C.ALPHAMOE_ERROR_NULL_POINTER
	StatusStructSize         Status = C.ALPHAMOE_ERROR_STRUCT_SIZE
	StatusNumExperts         Status = C.ALPHAMOE_ERROR_NUM_EXPERTS
	StatusTopK               Status = C.ALPHAMOE_ERROR_TOP_K
	StatusBlockM             Status = C.ALPHAMOE_ERROR_BLOCK_M
	StatusMaxTokens          Status = C.ALPHAMOE_ERROR_MAX_TOKENS
	StatusNumTokens          Status = C.ALPHAMOE_ERROR_NUM_TOKENS
	StatusSharedExpert       Status = C.ALPHAMOE_ERROR_SHARED_EXPERT
	StatusRowStride          Status = C.ALPHAMOE_ERROR_ROW_STRIDE
	StatusFlags              Status = C.ALPHAMOE_ERROR_FLAGS
	StatusSpecialization     Status = C.ALPHAMOE_ERROR_SPECIALIZATION
	StatusAlignment          Status = C.ALPHAMOE_ERROR_ALIGNMENT
	StatusCapacity           Status = C.ALPHAMOE_ERROR_CAPACITY
	StatusWorkspace          Status = C.ALPHAMOE_ERROR_WORKSPACE
	StatusNoDriver           Status = C.ALPHAMOE_ERROR_NO_DRIVER
	StatusNoDevice           Status = C.ALPHAMOE_ERROR_NO_DEVICE
	StatusNoImage            Status = C.ALPHAMOE_ERROR_NO_IMAGE
	StatusUnsupportedDevice  Status = C.ALPHAMOE_ERROR_UNSUPPORTED_DEVICE
	StatusCUDA               Status = C.ALPHAMOE_ERROR_CUDA
	StatusOutOfMemory        Status = C.ALPHAMOE_ERROR_OUT_OF_MEMORY
	StatusInvalidArgument    Status = C.ALPHAMOE_ERROR_INVALID_ARGUMENT
	StatusScoring            Status = C.ALPHAMOE_ERROR_SCORING
	StatusLogitsType         Status = C.ALPHAMOE_ERROR_LOGITS_TYPE
	StatusGroups             Status = C.ALPHAMOE_ERROR_GROUPS
	StatusScalingFactor      Status = C.ALPHAMOE_ERROR_SCALING_FACTOR
	StatusExpertParallel     Status = C.ALPHAMOE_ERROR_EXPERT_PARALLEL
	StatusUnsupportedFlavour Status = C.ALPHAMOE_ERROR_UNSUPPORTED_FLAVOUR
	StatusInvalidHandle      Status = C.ALPHAMOE_ERROR_INVALID_HANDLE
	StatusHashRouting        Status = C.ALPHAMOE_ERROR_HASH_ROUTING
	StatusRedundantExperts   Status = C.ALPHAMOE_ERROR_REDUNDANT_EXPERTS
)

// statusNames are the header's names; the header test checks that every
// status of the installed header is here.
var statusNames = map[Status]string{
	StatusOK:                 "ALPHAMOE_OK",
	StatusNullPointer:        "ALPHAMOE_ERROR_NULL_POINTER",
	StatusStructSize:         "ALPHAMOE_ERROR_STRUCT_SIZE",
	StatusNumExperts:         "ALPHAMOE_ERROR_NUM_EXPERTS",
	StatusTopK:               "ALPHAMOE_ERROR_TOP_K",
	StatusBlockM:             "ALPHAMOE_ERROR_BLOCK_M",
	StatusMaxTokens:          "ALPHAMOE_ERROR_MAX_TOKENS",
	StatusNumTokens:          "ALPHAMOE_ERROR_NUM_TOKENS",
	StatusSharedExpert:       "ALPHAMOE_ERROR_SHARED_EXPERT",
	StatusRowStride:          "ALPHAMOE_ERROR_ROW_STRIDE",
	StatusFlags:              "ALPHAMOE_ERROR_FLAGS",
	StatusSpecialization:     "ALPHAMOE_ERROR_SPECIALIZATION",
	StatusAlignment:          "ALPHAMOE_ERROR_ALIGNMENT",
	StatusCapacity:           "ALPHAMOE_ERROR_CAPACITY",
	StatusWorkspace:          "ALPHAMOE_ERROR_WORKSPACE",
	StatusNoDriver:           "ALPHAMOE_ERROR_NO_DRIVER",
	StatusNoDevice:           "ALPHAMOE_ERROR_NO_DEVICE",
	StatusNoImage:            "ALPHAMOE_ERROR_NO_IMAGE",
	StatusUnsupportedDevice:  "ALPHAMOE_ERROR_UNSUPPORTED_DEVICE",
	StatusCUDA:               "ALPHAMOE_ERROR_CUDA",
	StatusOutOfMemory:        "ALPHAMOE_ERROR_OUT_OF_MEMORY",
	StatusInvalidArgument:    "ALPHAMOE_ERROR_INVALID_ARGUMENT",
	StatusScoring:            "ALPHAMOE_ERROR_SCORING",
	StatusLogitsType:         "ALPHAMOE_ERROR_LOGITS_TYPE",
	StatusGroups:             "ALPHAMOE_ERROR_GROUPS",
	StatusScalingFactor:      "ALPHAMOE_ERROR_SCALING_FACTOR",
	StatusExpertParallel:     "ALPHAMOE_ERROR_EXPERT_PARALLEL",
	StatusUnsupportedFlavour: "ALPHAMOE_ERROR_UNSUPPORTED_FLAVOUR",
	StatusInvalidHandle:      "ALPHAMOE_ERROR_INVALID_HANDLE",
	StatusHashRouting:        "ALPHAMOE_ERROR_HASH_ROUTING",
	StatusRedundantExperts:   "ALPHAMOE_ERROR_REDUNDANT_EXPERTS",
}

// String is the header's name, e.g. "ALPHAMOE_ERROR_TOP_K"; "Status(99)"
// for a value this package does not know.
func (s Status) String() string {
	if name, ok := statusNames[s]; ok {
		return name
	}
	return "Status(" + strconv.Itoa(int(s)) + ")"
}

// Message is the library's fixed message, e.g. "ALPHAMOE_ERROR_TOP_K: top_k
// must be in [1, min(num_experts, 32)]".
func (s Status) Message() string {
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

// Sentinels, one a status: errors.Is(err, router.ErrTopK).
var (
	ErrNullPointer        = statusError(StatusNullPointer)
	ErrStructSize         = statusError(StatusStructSize)
	ErrNumExperts         = statusError(StatusNumExperts)
	ErrTopK               = statusError(StatusTopK)
	ErrBlockM             = statusError(StatusBlockM)
	ErrMaxTokens          = statusError(StatusMaxTokens)
	ErrNumTokens          = statusError(StatusNumTokens)
	ErrSharedExpert       = statusError(StatusSharedExpert)
	ErrRowStride          = statusError(StatusRowStride)
	ErrFlags              = statusError(StatusFlags)
	ErrSpecialization     = statusError(StatusSpecialization)
	ErrAlignment          = statusError(StatusAlignment)
	ErrCapacity           = statusError(StatusCapacity)
	ErrWorkspace          = statusError(StatusWorkspace)
	ErrNoDriver           = statusError(StatusNoDriver)
	ErrNoDevice           = statusError(StatusNoDevice)
	ErrNoImage            = statusError(StatusNoImage)
	ErrUnsupportedDevice  = statusError(StatusUnsupportedDevice)
	ErrCUDA               = statusError(StatusCUDA)
	ErrOutOfMemory        = statusError(StatusOutOfMemory)
	ErrInvalidArgument    = statusError(StatusInvalidArgument)
	ErrScoring            = statusError(StatusScoring)
	ErrLogitsType         = statusError(StatusLogitsType)
	ErrGroups             = statusError(StatusGroups)
	ErrScalingFactor      = statusError(StatusScalingFactor)
	ErrExpertParallel     = statusError(StatusExpertParallel)
	ErrUnsupportedFlavour = statusError(StatusUnsupportedFlavour)
	ErrInvalidHandle      = statusError(StatusInvalidHandle)
	ErrHashRouting        = statusError(StatusHashRouting)
	ErrRedundantExperts   = statusError(StatusRedundantExperts)
)

func statusError(s Status) *Error {
	return &Error{Status: s, Message: s.Message()}
}

// detailError is an error found before calling the library: the status's
// message followed by what was wrong.
func detailError(s Status, why string) error {
	return &Error{Status: s, Message: s.Message() + ": " + why}
}

// check turns a status into nil or an *Error.
func check(s C.alphamoe_status) error {
	if s == C.ALPHAMOE_OK {
		return nil
	}
	return statusError(Status(s))
}

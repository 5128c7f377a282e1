// The text of the public enums' values. Each takes the value as an int: a
// C caller may pass any.
#ifndef ALPHAMOE_CAPI_STATUS_H
#define ALPHAMOE_CAPI_STATUS_H

namespace alphamoe {

// "ALPHAMOE_<NAME>: what it means", for every alphamoe_status and for any
// other value.
const char *status_message(int status);

// "auto", "tiny", "small" or "large"; NULL for other values.
const char *specialization_name_of(int specialization);

}  // namespace alphamoe

#endif

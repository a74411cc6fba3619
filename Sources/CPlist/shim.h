#include <plist/plist.h>
#include <stdint.h>

// One Swift source for both generations of libplist: Debian 12's 2.2 and Homebrew's 2.3+ (2.7 today).
// Swift calls these hadeploy_* functions, never the calls whose declarations differ between them.
//
// Which generation: PLIST_OPT_INDENT_BY is a macro that libplist 2.3.0 added together with the
// plist_write_options_t (PLIST_OPT_*) enum, the 4-argument plist_from_memory and the rename of the
// PLIST_UINT constant to PLIST_INT (checked at the upstream tags 2.2.0 … 2.7.0). 2.2 has none of them.
#if defined(PLIST_OPT_INDENT_BY)
#define HADEPLOY_LIBPLIST_2_3 1
#else
#define HADEPLOY_LIBPLIST_2_3 0
#endif

// The integer node type. libplist ≥ 2.3 names it PLIST_INT and keeps PLIST_UINT as a macro alias,
// which Swift does not import; 2.2 has only the enum constant PLIST_UINT. This spelling is valid in
// both.
static inline plist_type hadeploy_plist_integer_type(void) {
    return PLIST_UINT;
}

// Parses XML or binary plist bytes into *plist (NULL when they are neither). libplist ≥ 2.3 also reads
// JSON and OpenStep and reports the format it found; the format is not needed here.
static inline void hadeploy_plist_from_memory(const char *data, uint32_t length, plist_t *plist) {
#if HADEPLOY_LIBPLIST_2_3
    (void)plist_from_memory(data, length, plist, NULL);
#else
    plist_from_memory(data, length, plist);
#endif
}

// Dates as seconds and microseconds since 2001-01-01. libplist 2.7 deprecates these two calls in
// favour of whole seconds since 1970 (plist_*_unix_date*, which drop the microseconds, and which 2.2
// lacks), so they are called here with the deprecation silenced: no warning in the Swift build.
#if defined(__clang__)
#pragma clang diagnostic push
#pragma clang diagnostic ignored "-Wdeprecated-declarations"
#elif defined(__GNUC__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
#endif

static inline void hadeploy_plist_get_date_val(plist_t node, int32_t *seconds, int32_t *microseconds) {
    plist_get_date_val(node, seconds, microseconds);
}

static inline plist_t hadeploy_plist_new_date(int32_t seconds, int32_t microseconds) {
    return plist_new_date(seconds, microseconds);
}

#if defined(__clang__)
#pragma clang diagnostic pop
#elif defined(__GNUC__)
#pragma GCC diagnostic pop
#endif

#include <libssh/libssh.h>
#include <libssh/sftp.h>
#include <libssh/callbacks.h>

// One Swift source for libssh 0.10 (Debian 12) and 0.11+ (Homebrew): 0.11.5 deprecates
// ssh_channel_get_exit_status in favour of ssh_channel_get_exit_state, which 0.10 lacks. The same call
// on both (the exit status, or -1 when none came), with the deprecation silenced: no warning in the
// Swift build.
#if defined(__clang__)
#pragma clang diagnostic push
#pragma clang diagnostic ignored "-Wdeprecated-declarations"
#elif defined(__GNUC__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
#endif

static inline int hadeploy_ssh_channel_get_exit_status(ssh_channel channel) {
    return ssh_channel_get_exit_status(channel);
}

#if defined(__clang__)
#pragma clang diagnostic pop
#elif defined(__GNUC__)
#pragma GCC diagnostic pop
#endif

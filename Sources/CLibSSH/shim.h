#include <libssh/libssh.h>
#include <libssh/sftp.h>
#include <libssh/callbacks.h>

/* The exit status of a channel's command, -1 when it sent none (killed by a signal, or no answer).
 * libssh 0.11 deprecated ssh_channel_get_exit_status (a warning with Homebrew's 0.11/0.12) for
 * ssh_channel_get_exit_state, which Debian 12's 0.10 does not have: one call for both. */
static inline int hadeploy_channel_exit_status(ssh_channel channel) {
#if defined(LIBSSH_VERSION_INT) && LIBSSH_VERSION_INT >= SSH_VERSION_INT(0, 11, 0)
    uint32_t code = 0;
    char *signal = NULL;
    int core_dumped = 0;
    int rc = ssh_channel_get_exit_state(channel, &code, &signal, &core_dumped);
    if (signal != NULL) {
        ssh_string_free_char(signal);
        return -1;
    }
    return rc == SSH_OK ? (int)code : -1;
#else
    return ssh_channel_get_exit_status(channel);
#endif
}

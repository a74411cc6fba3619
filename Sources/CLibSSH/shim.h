#include <libssh/libssh.h>
#include <libssh/sftp.h>
#include <libssh/callbacks.h>

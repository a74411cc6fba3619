#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// `close(2)` for types that have their own `close()` method.
func closeDescriptor(_ fd: Int32) {
    _ = close(fd)
}

/// `send` flag that suppresses SIGPIPE (Linux); Darwin sockets get SO_NOSIGPIPE instead.
#if canImport(Glibc)
    let noSignalFlag = Int32(MSG_NOSIGNAL)
#else
    let noSignalFlag: Int32 = 0
#endif

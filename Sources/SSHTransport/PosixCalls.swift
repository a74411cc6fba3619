#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

// The C calls SSHTransport spells differently on Linux (Glibc) and macOS (Darwin), in one place: the
// rest of the target calls these (scripts/platform-lint.sh fails on a platform spelling elsewhere).

/// `close(2)` for types that have their own `close()` method.
func closeDescriptor(_ fd: Int32) {
    _ = close(fd)
}

/// `send` flag that suppresses SIGPIPE (Linux); Darwin sockets get SO_NOSIGPIPE instead
/// (`ignoreBrokenPipe`).
#if canImport(Glibc)
    let noSignalFlag = Int32(MSG_NOSIGNAL)
#else
    let noSignalFlag: Int32 = 0
#endif

/// `SOCK_STREAM` as `socket()` and `addrinfo` take it: a Glibc enum on Linux, an `Int32` on Darwin.
#if canImport(Glibc)
    let streamSocketType = Int32(SOCK_STREAM.rawValue)
#else
    let streamSocketType = SOCK_STREAM
#endif

/// Darwin: a write to a socket whose peer closed fails with EPIPE instead of raising SIGPIPE. That
/// matters for the sockets handed to libssh (`SSH_OPTIONS_FD`): it passes `MSG_NOSIGNAL` only when
/// its own build defined it. Linux sends with `noSignalFlag` instead; nothing to do there.
func ignoreBrokenPipe(_ fd: Int32) {
    #if canImport(Darwin)
        var one: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_NOSIGPIPE, &one, socklen_t(MemoryLayout<Int32>.size))
    #endif
}

/// `connect(2)`, for scopes where a method of the same name hides it.
func systemConnect(_ fd: Int32, _ address: UnsafePointer<sockaddr>!, _ length: socklen_t) -> Int32 {
    #if canImport(Glibc)
        Glibc.connect(fd, address, length)
    #else
        Darwin.connect(fd, address, length)
    #endif
}

/// `accept(2)` without the peer's address, for scopes where a method of the same name hides it.
func systemAccept(_ fd: Int32) -> Int32 {
    #if canImport(Glibc)
        Glibc.accept(fd, nil, nil)
    #else
        Darwin.accept(fd, nil, nil)
    #endif
}

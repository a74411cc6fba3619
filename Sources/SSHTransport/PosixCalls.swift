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

/// `accept(2)` without the peer's address, for scopes where a method of the same name hides it.
func systemAccept(_ fd: Int32) -> Int32 {
    #if canImport(Glibc)
        Glibc.accept(fd, nil, nil)
    #else
        Darwin.accept(fd, nil, nil)
    #endif
}

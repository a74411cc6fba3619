#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// `close(2)` for types that have their own `close()` method.
func closeDescriptor(_ fd: Int32) {
    _ = close(fd)
}

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The C `read` and `write`, which methods of the same name would otherwise hide.
enum SystemIO {
    #if canImport(Glibc)
        static let read = Glibc.read
        static let write = Glibc.write
    #else
        static let read = Darwin.read
        static let write = Darwin.write
    #endif
}

import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The C spellings HADeployVirtual needs that differ between Linux (Glibc) and macOS (Darwin), in
/// one place (scripts/platform-lint.sh fails on a platform spelling anywhere else in the target).
enum PlatformCalls {
    /// `SOCK_STREAM` as `socket()` takes it: a Glibc enum on Linux, an `Int32` macro on Darwin.
    #if canImport(Glibc)
        static let streamSocket = Int32(SOCK_STREAM.rawValue)
    #else
        static let streamSocket = SOCK_STREAM
    #endif
}

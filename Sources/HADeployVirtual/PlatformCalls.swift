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

#if canImport(Darwin)
    /// Until JailbreakTwinProcess.swift uses `PlatformCalls.streamSocket` (it is pending in
    /// scripts/platform-lint.sh): its Linux spelling `Int32(SOCK_STREAM.rawValue)` compiles on Darwin,
    /// where `SOCK_STREAM` is already an `Int32`. Remove with that file's last `.rawValue` socket type.
    extension Int32 {
        var rawValue: Int32 { self }
    }
#endif

import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The C spellings HADeployDrivers needs that differ between Linux (Glibc) and macOS (Darwin), in
/// one place (scripts/platform-lint.sh fails on a platform spelling anywhere else in the target).
enum PlatformCalls {
    /// `SOCK_STREAM` as `socket()` takes it: a Glibc enum on Linux, an `Int32` macro on Darwin.
    #if canImport(Glibc)
        static let streamSocket = Int32(SOCK_STREAM.rawValue)
    #else
        static let streamSocket = SOCK_STREAM
    #endif

    /// The `send()` flags that keep a peer that closed from raising SIGPIPE: `MSG_NOSIGNAL` on
    /// Linux; none on Darwin, where `ignoreBrokenPipe` sets `SO_NOSIGPIPE` on the socket.
    #if canImport(Glibc)
        static let noSignalSendFlags = Int32(MSG_NOSIGNAL)
    #else
        static let noSignalSendFlags: Int32 = 0
    #endif

    /// Darwin: a write to a socket whose peer closed fails with EPIPE instead of killing hadeploy.
    static func ignoreBrokenPipe(_ fd: Int32) {
        #if canImport(Darwin)
            var one: Int32 = 1
            setsockopt(fd, SOL_SOCKET, SO_NOSIGPIPE, &one, socklen_t(MemoryLayout<Int32>.size))
        #endif
    }
}

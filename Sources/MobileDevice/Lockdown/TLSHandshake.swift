import CIMobileDevice
import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// TLS handshakes that wait for the device's answer instead of sleeping.
///
/// libimobiledevice 1.3.0 runs each handshake (a lockdown session, a service with EnableServiceSSL)
/// on the socket libusbmuxd opened non-blocking, and whenever the device has not answered by the
/// time OpenSSL first reads, it sleeps a fixed 100 ms before reading again (idevice.c,
/// `idevice_connection_enable_ssl`). An answer over a USB link always takes longer than that first
/// read; on a busy host a twin's does too: a deploy to 24 twins slept 162 times, 0.7 s per device.
/// With the socket blocking for the handshake, OpenSSL's read waits for the answer itself; the
/// socket's flags are put back afterwards. Each read still ends after half a second without an
/// answer (the library then sleeps and retries, as before); a device that never answers is bounded
/// by the step's deadline on the worker, as it was.
enum TLSHandshake {
    /// Runs `body` (which handshakes on the connection under `client`, `depth` first members down,
    /// see `ConnectionLiveness.descriptor`) with that socket blocking.
    static func blocking<T>(_ client: UnsafeRawPointer, depth: Int, _ body: () throws -> T) rethrows -> T {
        guard let fd = ConnectionLiveness.descriptor(client, depth: depth) else { return try body() }
        let flags = fcntl(fd, F_GETFL, 0)
        guard flags >= 0, flags & O_NONBLOCK != 0 else { return try body() }
        var saved = timeval()
        var length = socklen_t(MemoryLayout<timeval>.size)
        let hadTimeout = getsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &saved, &length) == 0
        // Each read waits at most this long; then the library's loop sleeps and reads again, as it
        // did, so a device that stalls mid-handshake never holds the thread in one endless read.
        var wait = timeval(tv_sec: 0, tv_usec: 500_000)
        _ = setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &wait, socklen_t(MemoryLayout<timeval>.size))
        _ = fcntl(fd, F_SETFL, flags & ~O_NONBLOCK)
        defer {
            _ = fcntl(fd, F_SETFL, flags)
            if hadTimeout {
                _ = setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &saved, socklen_t(MemoryLayout<timeval>.size))
            }
        }
        return try body()
    }

    /// Runs `make` (a service client's `*_new`) with the descriptor's TLS flag cleared, so the
    /// library connects in plain text; `enable` then does the handshake the descriptor asks for.
    static func connectPlain<Code>(_ descriptor: ServiceDescriptor, make: () -> Code) -> Code {
        let tls = descriptor.raw.pointee.ssl_enabled
        descriptor.raw.pointee.ssl_enabled = 0
        defer { descriptor.raw.pointee.ssl_enabled = tls }
        return make()
    }

    /// Starts TLS on the connection under `client`, `depth` first members down, on a blocking socket.
    static func enable(_ client: UnsafeRawPointer, depth: Int) -> Bool {
        var pointer = client
        for _ in 1..<depth {
            guard let next = pointer.load(as: UnsafeRawPointer?.self) else { return false }
            pointer = next
        }
        guard let connection = pointer.load(as: OpaquePointer?.self) else { return false }
        return blocking(client, depth: depth) {
            idevice_connection_enable_ssl(connection) == IDEVICE_E_SUCCESS
        }
    }
}

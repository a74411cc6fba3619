import CIMobileDevice
import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Whether a service connection's socket was closed by the other end, or is merely quiet.
///
/// libimobiledevice 1.3.0 offers no way from a `property_list_service_client_t` to its connection, so
/// this follows the library's private layout, unchanged since 1.1: the client's first member is its
/// `service_client_t`, whose first member is the `idevice_connection_t` (a `debugserver_client_t`
/// starts with its `service_client_t` too); `idevice_connection_get_fd` is public from there. The
/// socket is only peeked at, never read.
enum ConnectionLiveness {
    static func peerClosed(_ client: property_list_service_client_t) -> Bool {
        descriptor(UnsafeRawPointer(client), depth: 2).map(peerClosed) ?? false
    }

    /// A network connection's receive timeout is reported by libimobiledevice 1.3.0 as an unknown
    /// error, not as a timeout (src/idevice.c maps every socket error but EAGAIN to
    /// IDEVICE_E_UNKNOWN_ERROR for CONNECTION_NETWORK): the socket then is open with nothing to read.
    static func isQuiet(_ client: property_list_service_client_t) -> Bool {
        descriptor(UnsafeRawPointer(client), depth: 2).map(isQuiet) ?? false
    }

    /// As `isQuiet`, for a client whose first member is its `service_client_t`
    /// (`debugserver_client_t`) or for a `service_client_t` itself (`depth` 1).
    static func isQuiet(client: UnsafeRawPointer, depth: Int) -> Bool {
        descriptor(client, depth: depth).map(isQuiet) ?? false
    }

    /// The socket under a client: `depth` is how many first members lead to the connection
    /// (1 for a `service_client_t`, 2 for the clients built on one, 3 on a property-list client).
    static func descriptor(_ client: UnsafeRawPointer, depth: Int) -> Int32? {
        var pointer = client
        for _ in 1..<depth {
            guard let next = pointer.load(as: UnsafeRawPointer?.self) else { return nil }
            pointer = next
        }
        guard let connection = pointer.load(as: OpaquePointer?.self) else { return nil }
        var fd: Int32 = -1
        guard idevice_connection_get_fd(connection, &fd) == IDEVICE_E_SUCCESS, fd >= 0 else { return nil }
        return fd
    }

    private static func peerClosed(_ fd: Int32) -> Bool {
        var byte: UInt8 = 0
        let count = recv(fd, &byte, 1, Int32(MSG_PEEK | MSG_DONTWAIT))
        if count == 0 { return true }
        if count < 0 {
            return errno == ECONNRESET || errno == ENOTCONN || errno == EPIPE || errno == EBADF
        }
        return false
    }

    private static func isQuiet(_ fd: Int32) -> Bool {
        var byte: UInt8 = 0
        let count = recv(fd, &byte, 1, Int32(MSG_PEEK | MSG_DONTWAIT))
        return count < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)
    }
}

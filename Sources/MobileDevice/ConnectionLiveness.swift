import CIMobileDevice
import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Whether a service connection's socket was closed by the other end.
///
/// libimobiledevice 1.3.0 offers no way from a `property_list_service_client_t` to its connection, so
/// this follows the library's private layout, unchanged since 1.1: the client's first member is its
/// `service_client_t`, whose first member is the `idevice_connection_t`; `idevice_connection_get_fd`
/// is public from there. The socket is only peeked at, never read.
enum ConnectionLiveness {
    static func peerClosed(_ client: property_list_service_client_t) -> Bool {
        let clientPointer = UnsafeRawPointer(client)
        guard let service = clientPointer.load(as: UnsafeRawPointer?.self) else { return false }
        guard let connection = service.load(as: OpaquePointer?.self) else { return false }
        var fd: Int32 = -1
        guard idevice_connection_get_fd(connection, &fd) == IDEVICE_E_SUCCESS, fd >= 0 else { return false }
        var byte: UInt8 = 0
        let count = recv(fd, &byte, 1, Int32(MSG_PEEK | MSG_DONTWAIT))
        if count == 0 { return true }
        if count < 0 {
            return errno == ECONNRESET || errno == ENOTCONN || errno == EPIPE || errno == EBADF
        }
        return false
    }
}

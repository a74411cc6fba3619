import Foundation
import TestSupport

/// A TCP port on 127.0.0.1 that listens and never accepts: the kernel completes the handshake, so
/// a client connects and then hears nothing, like a server whose event loop is stuck. Written here
/// because no real Home Assistant behaves this way on demand. Close it with ``close()``.
final class SilentListener: Sendable {
    let port: Int
    private let descriptor: Int32

    init() throws {
        (descriptor, port) = try FreePort.loopbackSocket(listening: true)
    }

    func close() {
        Foundation.close(descriptor)
    }
}

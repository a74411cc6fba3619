import CIMobileDevice
import Foundation

/// Owns a `debugserver_client_t` used as a raw byte pipe: the GDB remote protocol on top is ours
/// (`GDBRemoteClient`), because 1.3.0's command helpers cannot detach (PROTOCOL.md §7).
/// Use only on the device's worker.
final class DebugServerConnection: ServiceClient, @unchecked Sendable, GDBTransport {
    /// Over TLS, libimobiledevice 1.3.0 keeps reading until the whole requested length arrived and
    /// drops a partial read on timeout (idevice.c, idevice_connection_receive_timeout): read one
    /// byte per call there, as idevicedebug does.
    private let oneByteReads: Bool

    init(device: DeviceHandle, descriptor: ServiceDescriptor, identity: DeviceIdentity) throws {
        // debugserver_client_new does the TLS handshake when lockdown said EnableServiceSSL
        // (DVTSecureSocketProxy, iOS ≥ 14).
        self.oneByteReads = descriptor.usesTLS
        try super.init(
            device: device, descriptor: descriptor, identity: identity, success: DEBUGSERVER_E_SUCCESS,
            new: debugserver_client_new,
            connectionDepth: 2,
            failure: { code in
                MobileDeviceError.connectionBroke(
                    step: "debugserver_client_new (\(descriptor.name))", device: identity,
                    reason: "could not connect to debugserver (error \(code.rawValue))")
            },
            release: { _ = debugserver_client_free($0) })
    }

    func send(_ bytes: [UInt8]) throws {
        var offset = 0
        while offset < bytes.count {
            var sent: UInt32 = 0
            let result = bytes[offset...].withUnsafeBufferPointer { buffer in
                buffer.withMemoryRebound(to: CChar.self) {
                    debugserver_client_send(raw, $0.baseAddress, UInt32($0.count), &sent)
                }
            }
            guard result == DEBUGSERVER_E_SUCCESS, sent > 0 else {
                throw MobileDeviceError.connectionBroke(
                    step: "debugserver_client_send", device: identity,
                    reason: "the debugserver connection broke (error \(result.rawValue))")
            }
            offset += Int(sent)
        }
    }

    func receive(maximum: Int, timeoutMilliseconds: UInt32) throws -> [UInt8] {
        let maximum = oneByteReads ? 1 : maximum
        var buffer = [UInt8](repeating: 0, count: maximum)
        var received: UInt32 = 0
        let result = buffer.withUnsafeMutableBufferPointer { pointer in
            pointer.withMemoryRebound(to: CChar.self) {
                debugserver_client_receive_with_timeout(
                    raw, $0.baseAddress, UInt32(maximum), &received, timeoutMilliseconds)
            }
        }
        if result == DEBUGSERVER_E_TIMEOUT || (result == DEBUGSERVER_E_SUCCESS && received == 0) { return [] }
        // Plain debugserver over Wi-Fi: 1.3.0 reports a receive timeout as an unknown error.
        if result == DEBUGSERVER_E_UNKNOWN_ERROR, handle.device.network,
            ConnectionLiveness.isQuiet(client: UnsafeRawPointer(raw), depth: 2)
        {
            return []
        }
        guard result == DEBUGSERVER_E_SUCCESS else {
            throw MobileDeviceError.connectionBroke(
                step: "debugserver_client_receive_with_timeout", device: identity,
                reason: "the debugserver connection broke (error \(result.rawValue))")
        }
        return Array(buffer.prefix(Int(received)))
    }
}

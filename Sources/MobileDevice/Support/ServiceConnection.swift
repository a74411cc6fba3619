import CIMobileDevice
import Foundation

/// Owns a raw `service_client_t`, for services with no framing of their own (crashreportmover
/// says "ping" in 4 raw bytes, PROTOCOL.md §8). Use only on the device's worker.
final class ServiceConnection: ServiceClient, @unchecked Sendable {

    init(device: DeviceHandle, descriptor: ServiceDescriptor, identity: DeviceIdentity) throws {
        try super.init(
            device: device, descriptor: descriptor, identity: identity, success: SERVICE_E_SUCCESS,
            new: service_client_new,
            connectionDepth: 1,
            failure: { code in
                MobileDeviceError.connectionBroke(
                    step: "service_client_new (\(descriptor.name))", device: identity,
                    reason: "could not connect to the service (error \(code.rawValue))")
            },
            release: { _ = service_client_free($0) })
    }

    /// Up to `maximum` bytes, or an empty array when nothing came within the timeout.
    func receive(maximum: Int, timeoutMilliseconds: UInt32, step: String) throws -> [UInt8] {
        var buffer = [UInt8](repeating: 0, count: maximum)
        var received: UInt32 = 0
        let result = buffer.withUnsafeMutableBufferPointer { pointer in
            pointer.withMemoryRebound(to: CChar.self) {
                service_receive_with_timeout(
                    raw, $0.baseAddress, UInt32(maximum), &received, timeoutMilliseconds)
            }
        }
        if result == SERVICE_E_TIMEOUT { return [] }
        // Over Wi-Fi, 1.3.0 reports a receive timeout as an unknown error (ConnectionLiveness.isQuiet).
        if result == SERVICE_E_UNKNOWN_ERROR, handle.device.network,
            ConnectionLiveness.isQuiet(client: UnsafeRawPointer(raw), depth: 1)
        {
            return []
        }
        guard result == SERVICE_E_SUCCESS else {
            throw MobileDeviceError.connectionBroke(
                step: step, device: identity,
                reason: "the service connection broke (error \(result.rawValue))")
        }
        return Array(buffer.prefix(Int(received)))
    }
}

import CIMobileDevice
import Foundation

/// Owns a raw `service_client_t`, for services with no framing of their own (crashreportmover
/// says "ping" in 4 raw bytes, PROTOCOL.md §8). Use only on the device's worker.
final class ServiceConnection: @unchecked Sendable {
    let raw: service_client_t
    let device: DeviceHandle
    let identity: DeviceIdentity

    init(device: DeviceHandle, descriptor: ServiceDescriptor, identity: DeviceIdentity) throws {
        var client: service_client_t?
        let result = service_client_new(device.raw, descriptor.raw, &client)
        guard result == SERVICE_E_SUCCESS, let client else {
            throw MobileDeviceError(
                .connectionLost, step: "service_client_new (\(descriptor.name))", device: identity,
                reason: "could not connect to the service (error \(result.rawValue))",
                nextStep: "Keep the device unlocked and connected, then retry.", isTransient: true)
        }
        BlockingSends.restore(client, depth: 1, on: device)
        self.raw = client
        self.device = device
        self.identity = identity
    }

    deinit {
        let raw = Unchecked(raw)
        let device = device
        device.worker.queue.async {
            service_client_free(raw.value)
            _ = device
        }
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
        if result == SERVICE_E_UNKNOWN_ERROR, device.network,
            ConnectionLiveness.isQuiet(client: UnsafeRawPointer(raw), depth: 1)
        {
            return []
        }
        guard result == SERVICE_E_SUCCESS else {
            throw MobileDeviceError(
                .connectionLost, step: step, device: identity,
                reason: "the service connection broke (error \(result.rawValue))",
                nextStep: "Keep the device unlocked and connected, then retry.", isTransient: true)
        }
        return Array(buffer.prefix(Int(received)))
    }
}

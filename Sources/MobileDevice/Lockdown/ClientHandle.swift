import CIMobileDevice
import Foundation

/// The one owner of a libimobiledevice client handle (`afc_client_t`, `screenshotr_client_t`, …):
/// made by the library's `*_new`, freed by its `*_free` on the device's worker, because the C
/// clients are not thread-safe, and only then may the device handle it was made from go.
final class ClientHandle<Raw>: @unchecked Sendable {
    let raw: Raw
    let device: DeviceHandle
    private let release: (Raw) -> Void

    /// Calls `make` (the library's `*_new`, given where to put the handle) and keeps what it made;
    /// any other code than `success` is turned into the error to throw by `failure`.
    init<Code: Equatable>(
        device: DeviceHandle, success: Code, make: (UnsafeMutablePointer<Raw?>) -> Code,
        failure: (Code) -> MobileDeviceError, release: @escaping (Raw) -> Void
    ) throws {
        var made: Raw?
        let code = make(&made)
        guard code == success, let made else { throw failure(code) }
        self.raw = made
        self.device = device
        self.release = release
    }

    /// Owns a handle made some other way (AFC on a connection that house_arrest vended).
    init(raw: Raw, device: DeviceHandle, release: @escaping (Raw) -> Void) {
        self.raw = raw
        self.device = device
        self.release = release
    }

    deinit {
        let work = Unchecked((raw, release))
        let device = device
        device.worker.queue.async {
            work.value.1(work.value.0)
            _ = device
        }
    }
}

/// A client of one device service: the library handle it owns (``ClientHandle``) and the device it
/// speaks for. Use only on the device's worker.
class ServiceClient: @unchecked Sendable {
    let handle: ClientHandle<OpaquePointer>
    let identity: DeviceIdentity
    var raw: OpaquePointer { handle.raw }
    var device: DeviceHandle { handle.device }

    /// Owns a handle made some other way (lockdownd's own connection, AFC on a vended connection).
    init(handle: ClientHandle<OpaquePointer>, identity: DeviceIdentity) {
        self.handle = handle
        self.identity = identity
    }

    /// The client of the service lockdown started at `descriptor`: `new` is the library's
    /// `*_client_new(device, service, &client)`. The connection's sends are made blocking again
    /// (``BlockingSends``; the connection is `connectionDepth` first members down the client).
    init<Code: Equatable>(
        device: DeviceHandle, descriptor: ServiceDescriptor, identity: DeviceIdentity, success: Code,
        new: (idevice_t?, lockdownd_service_descriptor_t?, UnsafeMutablePointer<OpaquePointer?>?) -> Code,
        connectionDepth: Int, failure: (Code) -> MobileDeviceError, release: @escaping (OpaquePointer) -> Void
    ) throws {
        // A service over TLS (EnableServiceSSL: debugserver's DVTSecureSocketProxy) connects in
        // plain text, then does its handshake on a blocking socket (``TLSHandshake``).
        handle = try ClientHandle(
            device: device, success: success,
            make: { made in TLSHandshake.connectPlain(descriptor) { new(device.raw, descriptor.raw, made) } },
            failure: failure, release: release)
        if descriptor.usesTLS, !TLSHandshake.enable(UnsafeRawPointer(handle.raw), depth: connectionDepth) {
            throw MobileDeviceError.connectionBroke(
                step: "TLS handshake (\(descriptor.name))", device: identity,
                reason: "the TLS handshake with \(descriptor.name) failed")
        }
        BlockingSends.restore(handle.raw, depth: connectionDepth, on: device)
        self.identity = identity
    }
}

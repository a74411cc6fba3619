import Foundation
import HADeployCore

/// One connection to a device: a fresh `idevice_t` (so a rebooted device's new usbmuxd id is
/// picked up) and the dedicated worker all its C calls run on.
final class DeviceSession: Sendable {
    let handle: DeviceHandle
    let worker: DeviceWorker
    let identity: DeviceIdentity
    /// Times the lockdown watchdog's patience.
    let clock: any WallClock

    init(handle: DeviceHandle, worker: DeviceWorker, identity: DeviceIdentity, clock: any WallClock) {
        self.handle = handle
        self.worker = worker
        self.identity = identity
        self.clock = clock
    }

    static func open(identity: DeviceIdentity, timeouts: USBTimeouts, network: Bool, clock: any WallClock)
        async throws -> DeviceSession
    {
        USBTransport.ignoreBrokenPipes
        let worker = DeviceWorker(label: identity.udid, device: identity)
        let handle = try await worker.run("idevice_new_with_options", within: timeouts.usbmuxd) {
            try DeviceHandle.open(udid: identity.udid, worker: worker, network: network)
        }
        return DeviceSession(handle: handle, worker: worker, identity: identity, clock: clock)
    }

    func run<T: Sendable>(
        _ step: String, within budget: Duration, _ body: @escaping @Sendable () throws -> T
    ) async throws -> T {
        try await worker.run(step, within: budget, body)
    }

    /// Connects to lockdownd, bounded by the handshake (or request) deadline and watched for a
    /// reply that is not lockdownd's protocol (`LockdownWatchdog`).
    func lockdown(handshake: Bool, timeouts: USBTimeouts) async throws -> LockdownClient {
        let step = handshake ? "lockdownd_client_new_with_handshake" : "lockdownd_client_new"
        let budget = handshake ? timeouts.handshake : timeouts.request
        let (identity, handle) = (identity, handle)
        return try await LockdownWatchdog.watch(step, device: identity, budget: budget, clock: clock) {
            try await self.run(step, within: budget) {
                try LockdownClient.connect(handle, identity: identity, handshake: handshake)
            }
        }
    }

    func startService(_ name: String, on lockdown: LockdownClient, timeouts: USBTimeouts) async throws
        -> ServiceDescriptor
    {
        try await run("lockdownd_start_service \(name)", within: timeouts.request) {
            try lockdown.startService(name)
        }
    }
}

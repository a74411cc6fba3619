import Foundation

/// `com.apple.misagent`: the provisioning profiles installed on the device (each as signed, a CMS
/// envelope). Spoken as plist messages on a property-list connection — `CopyAll` (iOS 9.3+), else
/// `Copy` — the same way libimobiledevice's misagent client and pymobiledevice3 do, so it is one
/// source for both library generations. Use only on the device's worker.
enum Misagent {
    static let service = "com.apple.misagent"

    static func installedProfiles(
        _ session: DeviceSession, lockdown: LockdownClient, iOS: IOSVersion, timeouts: USBTimeouts
    ) async throws -> [Data] {
        let descriptor = try await session.startService(service, on: lockdown, timeouts: timeouts)
        let step = "misagent Copy"
        let copyAll = iOS >= IOSVersion("9.3")
        return try await session.run(step, within: timeouts.request) {
            let connection = try PropertyListConnection(
                device: session.handle, descriptor: descriptor, identity: session.identity)
            try connection.send(
                .dictionary([
                    "MessageType": .string(copyAll ? "CopyAll" : "Copy"),
                    "ProfileType": .string("Provisioning"),
                ]), step: step)
            let seconds = max(1, Int(timeouts.request.components.seconds))
            guard let reply = try connection.receive(timeoutMilliseconds: UInt32(seconds * 1000), step: step)
            else {
                throw MobileDeviceError(
                    .deadlineExceeded, step: step, device: session.identity,
                    reason: "misagent did not answer within \(seconds) s",
                    nextStep: "Replug the device and retry.", isTransient: true)
            }
            if let status = reply["Status"]?.integer, status != 0 {
                throw MobileDeviceError(
                    .protocolError, step: step, device: session.identity,
                    reason: "misagent answered status 0x\(String(status, radix: 16))",
                    nextStep: "Unlock the device and retry.")
            }
            return (reply["Payload"]?.array ?? []).compactMap(\.data)
        }
    }
}
